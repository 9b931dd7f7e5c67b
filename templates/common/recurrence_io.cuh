// kdajit fragment: common/recurrence_io
// What the recurrences of the decomposed designs share: the value rows each
// warp owns, the fp32 state in m16n8k16 accumulator fragments (which wgmma's
// m64nN accumulators match warp by warp), its in-place load and store (spec
// section 1.4) at its slot of the state tensor or pool, the checkpoint rows,
// and the store of an output tile from SMEM; which (sequence, head, row block)
// a CTA works on.
// Uses kda_plan::recurrence::MMA_WARPS, THREADS and kda_plan::M_TILE.
namespace kda {
namespace frag {

// A fragment (16 rows x 16 k) from two adjacent fp32 accumulator tiles.
__device__ __forceinline__ void pack_a(const float (&lo)[4], const float (&hi)[4], u32 (&a)[4]) {
  a[0] = pack_bf16x2(lo[0], lo[1]);
  a[1] = pack_bf16x2(lo[2], lo[3]);
  a[2] = pack_bf16x2(hi[0], hi[1]);
  a[3] = pack_bf16x2(hi[2], hi[3]);
}

// The warps that hold the state (role "mma"); other roles (a producer) come after them.
constexpr int recurrence_warps() {
  return kda_plan::recurrence::MMA_WARPS;
}
constexpr int rows_per_warp() {
  return kda_plan::M_TILE / recurrence_warps();
}
constexpr int row_blocks() {
  return kda_plan::HEAD_DIM / kda_plan::M_TILE;
}
constexpr int row_tiles() {
  return rows_per_warp() / 16;
}

// What a CTA of a recurrent grid works on: sequence n, head h and value rows
// m0 .. m0 + M_TILE - 1, from recurrence_pair's (n, y = h x row blocks + row
// block) (common/sequences: packed layouts take the longest sequences first),
// and where sequence n lies.
struct RecurrenceWork {
  int n;
  int h;
  int m0;
  SequenceSpan seq;
};

__device__ __forceinline__ RecurrenceWork recurrence_work(const kda_plan::KdaParams& p) {
  const RecurrencePair pair = recurrence_pair(p);
  return {pair.n, pair.y / row_blocks(), (pair.y % row_blocks()) * kda_plan::M_TILE, pair.seq};
}

// state[mt][nt] for nt < 16; a wider array (TILES > 16) keeps more
// accumulator tiles after the state (the wgmma output columns).
template <int TILES>
__device__ __forceinline__ void load_state(const kda_plan::KdaParams& p, int n, int h, int m0,
                                           float (&state)[row_tiles()][TILES][4]) {
  static_assert(TILES >= 16, "16 state tiles");
  constexpr int D = kda_plan::HEAD_DIM;
  const int warp = threadIdx.x >> 5;
  const int g = (threadIdx.x & 31) >> 2;
  const int t = threadIdx.x & 3;
  const i64 base = p.state_in != nullptr ? state_base(p, n, h) : 0;
#pragma unroll
  for (int mt = 0; mt < row_tiles(); ++mt) {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = m0 + rows_per_warp() * warp + 16 * mt + g + 8 * (e >> 1);
        const int col = 8 * nt + 2 * t + (e & 1);
        float x = 0.0f;
        if (p.state_in != nullptr) {
          if (kda_plan::STATE_FP32) {
            x = static_cast<const float*>(p.state_in)[base + row * D + col];
          } else {
            x = bf16_to_float(static_cast<const bf16*>(p.state_in)[base + row * D + col]);
          }
        }
        state[mt][nt][e] = x;
      }
    }
  }
}

// The warp's rows of the state into `dst`, one (sequence, head)'s [128][128]
// state, as fp32 or bf16.
template <bool FP32, int TILES>
__device__ __forceinline__ void store_state_rows(void* dst, int m0, const float (&state)[row_tiles()][TILES][4]) {
  static_assert(TILES >= 16, "16 state tiles");
  constexpr int D = kda_plan::HEAD_DIM;
  const int warp = threadIdx.x >> 5;
  const int g = (threadIdx.x & 31) >> 2;
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int mt = 0; mt < row_tiles(); ++mt) {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = m0 + rows_per_warp() * warp + 16 * mt + g + 8 * half;
        const int col = 8 * nt + 2 * t;
        const float x0 = state[mt][nt][2 * half];
        const float x1 = state[mt][nt][2 * half + 1];
        if (FP32) {
          float2 pair;
          pair.x = x0;
          pair.y = x1;
          *reinterpret_cast<float2*>(static_cast<float*>(dst) + row * D + col) = pair;
        } else {
          *reinterpret_cast<u32*>(static_cast<bf16*>(dst) + row * D + col) = pack_bf16x2(x0, x1);
        }
      }
    }
  }
}

template <int TILES>
__device__ __forceinline__ void store_state(const kda_plan::KdaParams& p, int n, int h, int m0,
                                            const float (&state)[row_tiles()][TILES][4]) {
  const i64 base = state_base(p, n, h);
  void* const dst = kda_plan::STATE_FP32 ? static_cast<void*>(static_cast<float*>(p.state_out) + base)
                                         : static_cast<void*>(static_cast<bf16*>(p.state_out) + base);
  store_state_rows<kda_plan::STATE_FP32 != 0>(dst, m0, state);
}

// The state before local chunk c as a checkpoint row (bf16) when one is
// due (common/sequences: checkpoint_take); nothing in plans without checkpoints.
template <int TILES>
__device__ __forceinline__ void store_checkpoint(const kda_plan::KdaParams& p, CheckpointCursor& cursor, int n, int h,
                                                 int m0, i64 c, const float (&state)[row_tiles()][TILES][4]) {
  if (bf16* const row = checkpoint_take(p, cursor, n, h, c)) {
    store_state_rows<false>(row, m0, state);
  }
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
