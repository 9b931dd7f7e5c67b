/// \file
/// The serial half of the chunked algorithm (spec 2.3, 2.5): given a chunk's
/// operands and its start state S0, the carriers U = T * Diag(beta)(V - Kd S0^T)
/// and the fused update [S_new | O^T] = [S0 Diag(gamma) | O0^T] + U^T [Kr | Mqk^T].
#pragma once

#include "reference/chunk_operands.hpp"
#include "reference/matrix.hpp"

#include <span>

namespace kda::reference {

struct ChunkCarriers {
  Matrix p;     // prediction Kd S0^T [C][V]
  Matrix o0;    // Qd S0^T [C][V]
  Matrix delta; // Diag(beta)(V - P) [C][V]
  Matrix u;     // T * delta [C][V]
};

/// P, O0, Delta and U for the start state `state` ([v][k], fp64).
ChunkCarriers compute_chunk_carriers(const ChunkOperands& ops, std::span<const double> state);

/// The fused product, one concatenated GEMM with N = 128 + C columns: replaces
/// `state` with S_new and writes the chunk's valid output rows ([valid_rows][128])
/// to `output`.
void apply_fused_update(const ChunkOperands& ops, const ChunkCarriers& carriers, std::span<double> state,
                        std::span<double> output);

} // namespace kda::reference
