/// \file
/// Where a kernel rounds to bf16 and that it carries products and the state in
/// fp32: the CPU emulation of a schedule's numerics. The chunked algorithm
/// (chunk_operands, chunk_update) applies the points named by a schedule's
/// `numerics.bf16_rounding` when its ChunkConfig carries them; without them it
/// stays the fp64 reference.
#pragma once

#include "reference/matrix.hpp"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kda::reference {

/// The rounding points the emulation knows, in the order a chunk meets them:
///   beta                          sigmoid(beta) per row
///   kd_anchored, qd_anchored, ki  operands of L and Mqk (anchored designs)
///   lmat                          L before the inverse
///   inverse_merge                 the operands of each blocked-inverse merge (bf16
///                                 mma.sync: L21, T11, T22 and X = L21 T11)
///   mqk, tinv                     Mqk and T = (I + L)^-1
///   kd, qd, kr                    the restored operands of the state GEMMs
///   state_snapshot                the bf16 copy of the state the projections read
///   prediction                    P = Kd S0^T
///   delta, u                      Delta = Diag(beta)(V - P) and U = T Delta
///   upd                           T^T [Kr | Mqk^T] when the design folds the solve
///                                 into the update's operand (then U is not formed)
///   output                        the output tensor
struct RoundingPoints {
  std::set<std::string, std::less<>> bf16;

  bool has(std::string_view point) const { return bf16.find(point) != bf16.end(); }
  /// Throws InternalError naming an unknown point.
  static RoundingPoints from_names(const std::vector<std::string>& names);
  static const std::vector<std::string>& known_points();
};

/// Round to nearest even at bf16 (8-bit mantissa) and at fp32.
double round_to_bf16(double x);
double round_to_fp32(double x);
void round_to_bf16(Matrix& m);
void round_to_fp32(Matrix& m);

} // namespace kda::reference
