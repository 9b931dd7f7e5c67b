#include "compiler/lower/passes.hpp"

namespace kda {

TilePlan resolve_tiles(const ValidatedSchedule& v, const ShapeKey& shape) {
  TilePlan t;
  t.chunk_size = v.schedule().chunk_size;
  t.head_dim = shape.head_dim;
  t.m_tile = v.schedule().m_tile;
  t.value_rows_per_warp = 32; // four MMA warps own 128 value rows
  return t;
}

} // namespace kda
