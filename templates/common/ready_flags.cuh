// kdajit fragment: common/ready_flags
// Records handed from a prepare kernel to a recurrence kernel that runs at the
// same time (schedule `prepare_overlap`): one u32 flag per record, at the
// record's index (global chunk x heads + head), set to the call's epoch once
// the record is in global memory. p.ready_flags == nullptr: the kernels run one
// after the other and neither writes nor reads a flag.
//   publish: every thread's record stores, CTA barrier, then thread 0
//            fence.acq_rel.gpu and st.release.gpu of the epoch (PTX ISA 8.x
//            memory consistency model: release is cumulative over the writes
//            the barrier made visible to thread 0)
//   wait:    ld.acquire.gpu until the flag holds the epoch (with a nanosleep
//            back-off), then fence.proxy.async.global so that the bulk copy
//            (async proxy) that reads the record is ordered after the acquire
//   clear:   the leading prepare kernel (chunk_major, chunk_begin 0: local
//            chunks [0, gridDim.z) of every pair) zeroes the flags of its
//            pair's later chunks, z + gridDim.z, z + 2 gridDim.z, ...; the
//            kernels that set and wait for those flags are both ordered after
//            it, and it sets the flags of its own chunks itself. So no flag
//            of a call holds its epoch before the record is ready, whatever
//            the flags held before: a planned run (and every replay of a
//            captured one) waits for the same epoch, 1, with no memset.
// Eager calls take a new epoch per call on one workspace as well. Uses
// KdaParams::ready_flags, ready_epoch, chunk_major, chunk_begin.
namespace kda {

__device__ __forceinline__ void publish_record_ready(const kda_plan::KdaParams& p, i64 record_index) {
  if (p.ready_flags == nullptr) {
    return;
  }
  __syncthreads(); // every thread's stores of this record are done
  if (threadIdx.x == 0) {
    __threadfence();
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p.ready_flags + record_index),
                 "r"(static_cast<u32>(p.ready_epoch))
                 : "memory");
  }
}

// `local_chunk` of a sequence of `chunks` chunks starting at global chunk
// `first_chunk`, head h: the clear step above (every thread of the CTA).
__device__ __forceinline__ void clear_later_ready_flags(const kda_plan::KdaParams& p, i64 first_chunk, i64 chunks,
                                                        i64 local_chunk, int h) {
  if (p.ready_flags == nullptr || p.chunk_major == 0 || p.chunk_begin != 0) {
    return;
  }
  const i64 lead = gridDim.z;
  for (i64 j = local_chunk + (1 + static_cast<i64>(threadIdx.x)) * lead; j < chunks;
       j += static_cast<i64>(blockDim.x) * lead) {
    p.ready_flags[(first_chunk + j) * p.heads + h] = 0u;
  }
}

__device__ __forceinline__ void wait_record_ready(const kda_plan::KdaParams& p, i64 record_index) {
  if (p.ready_flags == nullptr) {
    return;
  }
  const u32 epoch = static_cast<u32>(p.ready_epoch);
  u32 seen = 0;
  u32 pause = 32;
  for (;;) {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(p.ready_flags + record_index) : "memory");
    if (seen == epoch) {
      break;
    }
    __nanosleep(pause);
    pause = pause < 512 ? 2 * pause : pause;
  }
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

} // namespace kda
