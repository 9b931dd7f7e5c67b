// kdajit fragment: common/state_rows
// The fp32 state of a warp_mma or wgmma consumer in registers: warp w of
// the consumer (warps 0 .. W - 1) owns ROWS = 16 MT value rows
// m0 + ROWS w .. of the CTA's M_TILE rows, held as m16n8k16 accumulator
// fragments state[mt][nt] (rows m0 + ROWS w + 16 mt + {g, g + 8}, key
// columns 8 nt + 2t + {0, 1}; wgmma's m64nN accumulators match warp by
// warp). Its in-place load and store (spec section 1.4) at its slot of the
// state tensor or pool, the checkpoint rows, and which (sequence, head, row
// block) a CTA of a recurrent grid works on. MT and the tile count are the
// state array's extents, so no kernel's constants are needed here.
// Uses kda_plan::M_TILE, HEAD_DIM, STATE_FP32.
namespace kda {
namespace frag {

// A fragment (16 rows x 16 k) from two adjacent fp32 accumulator tiles.
__device__ __forceinline__ void pack_a(const float (&lo)[4], const float (&hi)[4], u32 (&a)[4]) {
  a[0] = pack_bf16x2(lo[0], lo[1]);
  a[1] = pack_bf16x2(lo[2], lo[3]);
  a[2] = pack_bf16x2(hi[0], hi[1]);
  a[3] = pack_bf16x2(hi[2], hi[3]);
}

constexpr int row_blocks() {
  return kda_plan::HEAD_DIM / kda_plan::M_TILE;
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

// The work items of a persistent recurrence and of a prepare kernel that
// walks them beside it (wgmma/prepare_chunk32): every (sequence, head, M
// tile).
__device__ __forceinline__ i64 persistent_items(const kda_plan::KdaParams& p) {
  return static_cast<i64>(p.num_seqs) * p.heads * row_blocks();
}

// Work item `item`: the (sequence, head, M tile) the direct grid gives the
// block at linear position `item` (common/sequences: recurrence_pair, whose
// packed order this follows: the caller's seq_order, else the longest
// sequences first). Whole warp: up to WARP_TABLE_MAX_SEQUENCES packed
// sequences rank by shuffles.
__device__ __forceinline__ RecurrenceWork persistent_work(const kda_plan::KdaParams& p, i64 item) {
  const int pairs_y = p.heads * row_blocks();
  // 32-bit division where the item index fits (every call of fewer than
  // 2^31 items): a 64-bit one is a long instruction sequence on every item
  const bool narrow = item <= 0x7fffffff;
  const int position = narrow ? static_cast<int>(static_cast<u32>(item) / static_cast<u32>(pairs_y))
                              : static_cast<int>(item / pairs_y);
  const int y = narrow ? static_cast<int>(static_cast<u32>(item) % static_cast<u32>(pairs_y))
                       : static_cast<int>(item % pairs_y);
  if (!kda_plan::LAYOUT_PACKED) {
    return {position, y / row_blocks(), (y % row_blocks()) * kda_plan::M_TILE, sequence_span(p, position)};
  }
  const OrderedSequence s = packed_sequence_at(p, position);
  return {s.n, y / row_blocks(), (y % row_blocks()) * kda_plan::M_TILE, s.seq};
}

// persistent_work as one out-of-line copy, for the producer warps, which look
// an item up once per item with few values live across it. Each inlined copy
// of the packed lookup is some 250 instructions (most of them the warp-table
// branch that calls of many sequences never take), and every role's copies
// share an SM sub-partition's instruction cache with the MMA warps. The MMA
// warps keep the inline copy: a call among their accumulators makes ptxas
// serialize their wgmma (C7512).
__device__ __noinline__ RecurrenceWork persistent_work_out_of_line(const kda_plan::KdaParams& p, i64 item) {
  return persistent_work(p, item);
}

// The value row of element e of this lane's tile mt (warp w owns 16 MT rows).
template <int MT>
__device__ __forceinline__ int state_row(int m0, int mt, int e) {
  const int warp = threadIdx.x >> 5;
  const int g = (threadIdx.x & 31) >> 2;
  return m0 + 16 * MT * warp + 16 * mt + g + 8 * (e >> 1);
}

// state[mt][nt] for nt < 16; a wider array (TILES > 16) keeps more
// accumulator tiles after the state (the wgmma output columns).
template <int MT, int TILES>
__device__ __forceinline__ void load_state(const kda_plan::KdaParams& p, int n, int h, int m0,
                                           float (&state)[MT][TILES][4]) {
  static_assert(TILES >= 16, "16 state tiles");
  constexpr int D = kda_plan::HEAD_DIM;
  const int t = threadIdx.x & 3;
  const i64 base = p.state_in != nullptr ? state_base(p, n, h) : 0;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = state_row<MT>(m0, mt, e);
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
template <bool FP32, int MT, int TILES>
__device__ __forceinline__ void store_state_rows(void* dst, int m0, const float (&state)[MT][TILES][4]) {
  static_assert(TILES >= 16, "16 state tiles");
  constexpr int D = kda_plan::HEAD_DIM;
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = state_row<MT>(m0, mt, 2 * half);
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

template <int MT, int TILES>
__device__ __forceinline__ void store_state(const kda_plan::KdaParams& p, int n, int h, int m0,
                                            const float (&state)[MT][TILES][4]) {
  const i64 base = state_base(p, n, h);
  void* const dst = kda_plan::STATE_FP32 ? static_cast<void*>(static_cast<float*>(p.state_out) + base)
                                         : static_cast<void*>(static_cast<bf16*>(p.state_out) + base);
  store_state_rows<kda_plan::STATE_FP32 != 0>(dst, m0, state);
}

// The state before local chunk c as a checkpoint row (bf16) when one is
// due (common/sequences: checkpoint_take); nothing in plans without checkpoints.
template <int MT, int TILES>
__device__ __forceinline__ void store_checkpoint(const kda_plan::KdaParams& p, CheckpointCursor& cursor, int n, int h,
                                                 int m0, i64 c, const float (&state)[MT][TILES][4]) {
  if (bf16* const row = checkpoint_take(p, cursor, n, h, c)) {
    store_state_rows<false>(row, m0, state);
  }
}

} // namespace frag
} // namespace kda
