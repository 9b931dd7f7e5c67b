/// \file
/// The chunk-parallel half of the chunked algorithm (spec 2.1, 2.2, 2.4): for
/// one chunk of one (sequence, head), the log2 gate prefix sums G, the decayed
/// operands, L, Mqk and T = (I + L)^-1, all in fp64, with or without the fixed
/// exponent anchor. Every intermediate is kept so tests can inspect it.
#pragma once

#include "reference/head_tokens.hpp"
#include "reference/matrix.hpp"
#include "reference/rounding.hpp"
#include "reference/unit_lower_inverse.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace kda::reference {

struct ChunkConfig {
  std::int64_t chunk_size = 32; // 16, 32 or 64
  /// Fixed anchor C_a = (chunk_size / 2) * b, b = lower_bound * log2 e (16 b for
  /// chunk 32); needs a lower bound. Unanchored: C_a = 0.
  bool anchored = true;
  /// Absent: Neumann for chunk 16, blocked otherwise.
  std::optional<InverseScheme> inverse;
  /// The blocked scheme's diagonal blocks (rows), by forward substitution.
  std::int64_t inverse_block = 8;
  /// Present: emulate a kernel's numerics (bf16 at these points, fp32
  /// products and state); absent: fp64 throughout.
  std::optional<RoundingPoints> rounding;
  /// Mqk's diagonal as scale q^ . k^ from the normalised rows (no anchored
  /// operand, so none of their rounding), as a kernel that forms it from the
  /// raw rows does; otherwise from the operands like every other entry.
  bool mqk_diagonal_from_raw_rows = false;

  static ChunkConfig unanchored_16() { return ChunkConfig{16, false, std::nullopt, 8, std::nullopt}; }
  static ChunkConfig anchored_32() { return ChunkConfig{32, true, std::nullopt, 8, std::nullopt}; }
  InverseScheme inverse_scheme() const;
};

/// The anchor C_a of `config` for the given lower bound (0 when unanchored).
double chunk_anchor(const ChunkConfig& config, std::optional<double> lower_bound);

struct ChunkOperands {
  std::optional<RoundingPoints> rounding; // the emulated numerics, if any (from ChunkConfig)
  std::int64_t size = 0;       // C
  std::int64_t valid_rows = 0; // rows holding a token; padded rows have a2 = 0, k = v = beta = 0
  double anchor = 0.0;         // C_a (log2 domain)
  Matrix g;                    // G [C][K]: log2 prefix sums of a2 = a * log2 e
  std::vector<double> g_total; // G_tot [K] = G of the last row
  std::vector<double> gamma;   // 2^G_tot [K]
  std::vector<double> beta;    // [C]
  Matrix v;                    // [C][V]
  // The anchored operands and the exponents of the factors actually applied.
  Matrix kd_exponent;          // G_i - C_a [C][K]
  Matrix ki_exponent;          // C_a - G_j [C][K]
  std::vector<double> kr_exponent; // G_tot - C_a [K], applied to Ki to form Kr
  Matrix kd_anchored;          // k_hat * 2^(G_i - C_a)
  Matrix qd_anchored;          // scale * q_hat * 2^(G_i - C_a)
  Matrix ki;                   // k_hat * 2^(C_a - G_j)
  Matrix l;                    // Diag(beta) StrictLower(Kd_a Ki^T) [C][C]
  Matrix mqk;                  // LowerInclDiag(Qd_a Ki^T) [C][C]
  Matrix t;                    // (I + L)^-1
  // Restored operands (true decay factors).
  Matrix kd;                   // Kd_a * 2^C_a = k_hat * 2^G_i
  Matrix qd;                   // Qd_a * 2^C_a = scale * q_hat * 2^G_i
  Matrix kr;                   // Ki * 2^(G_tot - C_a) = k_hat * 2^(G_tot - G_j)
};

/// The operands of the chunk of `tokens` that starts at local token `begin`.
/// Masks by selection: the upper triangle of L and Mqk is never computed.
ChunkOperands prepare_chunk(const HeadTokens& tokens, std::int64_t begin, double scale, const ChunkConfig& config);

} // namespace kda::reference
