// kdajit fragment: tcgen05/fused_kernel
// The fused kernel of seed note 000 (one CTA per (sequence, head) and block
// of M_TILE value rows: M 128, or M 64 with two CTAs that both prepare every
// chunk; chunk 32 with the exponent anchor, or chunk 16 without): barrier and TMEM
// set-up, then each warp role's loop
// (tcgen05/fused_prepare: load warp, producer groups; tcgen05/fused_consumer:
// state warps, MMA warp, epilogue warps), then TMEM is freed. Roles meet only
// at mbarriers and their own named barriers between the two CTA barriers.
// Uses kda_plan::main::* (roles, SMEM plan), TMEM_COLUMNS.
namespace kda {
namespace frag {

__device__ __forceinline__ void fused_prefill(const kda_plan::KdaParams& p) {
  namespace F = kda_plan::main;
  static_assert(F::STATE_FIRST_WARP == 0 && F::EPILOGUE_FIRST_WARP == F::STATE_WARPS && F::STATE_WARPS == 4,
                "state warps 0-3 and epilogue warps 4-7: warp w reaches TMEM lanes 32 (w % 4) ..");
  static_assert(F::LOAD_WARPS == 1 && F::MMA_WARPS == 1, "one load warp, one MMA warp");
  static_assert(F::PRODUCER_WARPS % F::PRODUCER_GROUPS == 0, "whole warps per producer group");
  extern __shared__ __align__(1024) u8 smem[];
  // x: the sequence in launch order, or at position x of the caller's
  // seq_order (packed only); y: head x row blocks + row block
  const int n = kda_plan::LAYOUT_PACKED && p.seq_order != nullptr ? p.seq_order[blockIdx.x] : static_cast<int>(blockIdx.x);
  constexpr int ROW_BLOCKS = kda_plan::HEAD_DIM / kda_plan::M_TILE;
  const int h = blockIdx.y / ROW_BLOCKS;
  const int m0 = (blockIdx.y % ROW_BLOCKS) * kda_plan::M_TILE; // the CTA's first value row
  const SequenceSpan seq = sequence_span(p, n);
  const i64 chunks = chunks_of(seq.length);
  const int warp = threadIdx.x >> 5;
  const FusedBarriers bar = fused_barriers(smem);
  u32* const tmem_slot = smem_layout(smem).tmem_base;
  if (threadIdx.x == 0) {
    init_fused_barriers(bar);
  }
  if (warp == F::MMA_FIRST_WARP) {
    tmem_allocate_warp(tmem_slot, kda_plan::TMEM_COLUMNS);
  }
  tcgen05_fence_before_thread_sync();
  __syncthreads();
  tcgen05_fence_after_thread_sync();
  const TmemSpace t = tmem_open(p, tmem_slot);

  if (warp < F::STATE_FIRST_WARP + F::STATE_WARPS) {
    consume_state(p, bar, t, smem, seq, n, h, m0, chunks, threadIdx.x - 32 * F::STATE_FIRST_WARP);
  } else if (warp < F::EPILOGUE_FIRST_WARP + F::EPILOGUE_WARPS) {
    consume_epilogue(p, bar, t, smem, seq, h, m0, chunks, threadIdx.x - 32 * F::EPILOGUE_FIRST_WARP);
  } else if (warp == F::LOAD_FIRST_WARP) {
    load_raw_tiles(p, bar.ring, smem, seq, h, chunks);
  } else if (warp == F::MMA_FIRST_WARP) {
    consume_mma(bar, t, smem, seq, chunks);
  } else if (warp >= F::PRODUCER_FIRST_WARP) {
    constexpr int group_threads = 32 * F::PRODUCER_WARPS / F::PRODUCER_GROUPS;
    const int pt = threadIdx.x - 32 * F::PRODUCER_FIRST_WARP;
    prepare_group<false>(p, bar.ring, smem, seq, h, chunks, pt / group_threads, pt % group_threads);
  }

  tcgen05_fence_before_thread_sync();
  __syncthreads();
  tcgen05_fence_after_thread_sync();
  if (warp == F::MMA_FIRST_WARP) {
    tmem_free_warp(t, kda_plan::TMEM_COLUMNS);
  }
}

} // namespace frag
} // namespace kda
