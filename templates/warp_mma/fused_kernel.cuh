// kdajit fragment: warp_mma/fused_kernel
// The fused warp_mma kernel (sm120_c32: sm_120a within 101,376 B per block,
// and its sm_90a proxy): one CTA per (sequence, head), chunk 32 with the
// exponent anchor. The producer groups (common/fused_prepare) load and
// prepare the ring's chunks (common/fused_ring); the MMA warps (warp_mma/fused_consumer)
// take its chunks in order with the fp32 state in registers. Roles meet only
// at the ring's mbarriers and their own named barriers between the two CTA
// barriers.
// Uses kda_plan::main::* (roles, SMEM plan).
namespace kda {
namespace frag {

__device__ __forceinline__ void fused_prefill(const kda_plan::KdaParams& p) {
  namespace F = kda_plan::main;
  static_assert(F::PRODUCER_FIRST_WARP == F::MMA_WARPS, "MMA warps, then the producer groups");
  static_assert(F::PRODUCER_WARPS % F::PRODUCER_GROUPS == 0, "whole warps per producer group");
  extern __shared__ __align__(1024) u8 smem[];
  const RecurrenceWork w = recurrence_work(p); // every lane: packed orders may shuffle
  const i64 chunks = chunks_of(w.seq.length);
  const int warp = threadIdx.x >> 5;
  const RingBarriers bar = ring_barriers(smem);
  if (threadIdx.x == 0) {
    init_ring_barriers(bar, F::MMA_WARPS, 32u * F::PRODUCER_WARPS / F::PRODUCER_GROUPS); // groups load their tiles
    mbarrier_init_fence();
  }
  __syncthreads();

  if (warp < F::MMA_FIRST_WARP + F::MMA_WARPS) {
    consume_chunks(p, bar, smem, w, chunks);
  } else {
    constexpr int group_threads = 32 * F::PRODUCER_WARPS / F::PRODUCER_GROUPS;
    const int pt = threadIdx.x - 32 * F::PRODUCER_FIRST_WARP;
    prepare_group<true>(p, bar, smem, w.seq, w.h, chunks, pt / group_threads, pt % group_threads);
  }
  __syncthreads();
}

} // namespace frag
} // namespace kda
