#include "compiler/kernel_plan.hpp"

namespace kda {

NumericsPlan plan_numerics(const Schedule& s, int inverse_block) {
  NumericsPlan n;
  n.bf16_rounding = s.numerics.bf16_rounding;
  n.anchor_rows = s.exponent_anchor == ExponentAnchor::lower_bound ? s.chunk_size / 2 : 0;
  n.inverse_block = inverse_block < s.chunk_size ? inverse_block : s.chunk_size;
  n.mqk_diagonal_from_raw_rows = s.numerics.mqk_diagonal == MqkDiagonal::raw_rows;
  return n;
}

} // namespace kda
