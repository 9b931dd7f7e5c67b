// kdajit fragment: common/recurrence_io
// What the recurrences of the decomposed designs share beside
// common/state_rows: the value rows each of the recurrence's MMA warps owns
// and the store of an output tile from SMEM.
// Uses kda_plan::recurrence::MMA_WARPS, THREADS, OUT_PITCH and kda_plan::M_TILE.
namespace kda {
namespace frag {

// The warps that hold the state (role "mma"); other roles (a producer) come after them.
constexpr int recurrence_warps() {
  return kda_plan::recurrence::MMA_WARPS;
}
constexpr int rows_per_warp() {
  return kda_plan::M_TILE / recurrence_warps();
}
constexpr int row_tiles() {
  return rows_per_warp() / 16;
}

// The valid rows of chunk `c`'s output tile (SMEM, [C][OUT_PITCH], value
// columns m0 .. m0 + M_TILE of it) to the output.
__device__ __forceinline__ void store_output_tile(const kda_plan::KdaParams& p, const u8* tile, const SequenceSpan& seq,
                                                  int h, int m0, i64 c) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int parts = 2 * kda_plan::M_TILE / 16;
  const i64 row0 = c * C;
  const int valid = static_cast<int>(min(static_cast<i64>(C), seq.length - row0));
  for (int i = threadIdx.x; i < valid * parts; i += R::THREADS) {
    const int r = i / parts;
    const int part = i % parts + 2 * m0 / 16;
    const i64 at = ((seq.start + row0 + r) * p.heads + h) * D * 2 + 16 * part;
    *reinterpret_cast<uint4*>(reinterpret_cast<u8*>(p.out) + at) =
        *reinterpret_cast<const uint4*>(tile + 2 * r * R::OUT_PITCH + 16 * part);
  }
}

} // namespace frag
} // namespace kda
