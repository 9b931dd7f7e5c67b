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
// No flag of a call may hold its epoch before the record is ready: eager
// calls take a new epoch per call on one set of flags (zeroed when allocated
// and when the 32-bit epoch wraps); planned runs (and every replay of a
// captured one) wait for the constant epoch 1 and zero their flags on the
// caller's stream before the prepare kernels (the call's memset). Uses
// KdaParams::ready_flags, ready_epoch.
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
