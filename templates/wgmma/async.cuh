// kdajit fragment: wgmma/async
// sm_90a warpgroup MMA ordering: wgmma fence / commit / wait (PTX ISA
// 9.7.15.6); setmaxnreg. The wgmma instructions themselves are emitted from the plan
// (emit_wgmma_ops); mbarriers and bulk copies are in common/async_copy.
namespace kda {

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Moves registers between a CTA's warpgroups (PTX ISA 9.7.19.6 setmaxnreg,
// sm_90a): every warp of the warpgroup executes it; the entry count is the
// kernel's __maxnreg__.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

} // namespace kda
