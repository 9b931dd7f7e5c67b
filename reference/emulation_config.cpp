#include "reference/emulation_config.hpp"

#include "compiler/errors.hpp"

namespace kda::reference {

ChunkConfig emulation_config(const NumericsPlan& n, int chunk_size) {
  KDA_INTERNAL_ASSERT(n.anchor_rows == 0 || n.anchor_rows * 2 == chunk_size,
                      "the reference anchors at C_a = (C / 2) lower_bound log2 e");
  KDA_INTERNAL_ASSERT(n.inverse_block > 0 && chunk_size % n.inverse_block == 0 &&
                          ((chunk_size / n.inverse_block) & (chunk_size / n.inverse_block - 1)) == 0,
                      "the inverse's diagonal blocks divide the chunk in a power of two");
  ChunkConfig c;
  c.chunk_size = chunk_size;
  c.anchored = n.anchor_rows > 0;
  c.inverse = n.inverse_block == chunk_size ? InverseScheme::forward_substitution : InverseScheme::blocked;
  c.inverse_block = n.inverse_block;
  c.rounding = RoundingPoints::from_names(n.bf16_rounding);
  c.mqk_diagonal_from_raw_rows = n.mqk_diagonal_from_raw_rows;
  return c;
}

} // namespace kda::reference
