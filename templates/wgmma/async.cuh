// kdajit fragment: wgmma/async
// sm_90a warpgroup MMA ordering: wgmma fence / commit / wait (PTX ISA
// 9.7.15.6); setmaxnreg; stmatrix. The wgmma instructions themselves are emitted from the plan
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

// Four 8x8 b16 matrices to SMEM, each transposed (PTX ISA "stmatrix", sm_90):
// thread (g = lane / 4, t = lane % 4) gives row g, elements 2t and 2t+1 of
// matrix j in r[j]; lanes 8j..8j+7 give the addresses of the 8 stored rows of
// matrix j (16-byte aligned), stored row i = column i of the fragment.
__device__ __forceinline__ void stmatrix_x4_trans(void* row, const u32 (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_address(row)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

// Four 8x8 b16 matrices to SMEM as they are (PTX ISA "stmatrix", sm_90):
// thread (g, t) gives row g, elements 2t and 2t+1 of matrix j in r[j]; lanes
// 8j..8j+7 give the addresses of matrix j's 8 rows (16-byte aligned).
__device__ __forceinline__ void stmatrix_x4(void* row, const u32 (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_address(row)), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
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
