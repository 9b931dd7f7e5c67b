// kdajit fragment: tcgen05/ops
// sm_100a / sm_100f / sm_103a tensor-core and tensor-memory instructions
// (PTX ISA 9.7.16 "TensorCore 5th Generation Family Instructions"), one thin
// wrapper each, cta_group::1. Descriptors and the instruction descriptor are
// encoded on the host (compiler/encodings/) and arrive as plan constants; the
// device adds only addresses. Needs the mbarrier helpers of common/async_copy.
// Compile-verified only: there is no Blackwell GPU in this workplace.
namespace kda {

// Allocates `columns` TMEM columns (a power of two, 32..512) for the CTA and
// writes their base address to SMEM `slot`. One full warp executes it.
__device__ __forceinline__ void tmem_alloc(u32* slot, u32 columns) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(smem_address(slot)),
               "r"(columns)
               : "memory");
}

// Lets other CTAs on the SM allocate (after this CTA's only allocation).
__device__ __forceinline__ void tmem_relinquish_alloc_permit() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}

// Frees what tmem_alloc took. One full warp executes it.
__device__ __forceinline__ void tmem_dealloc(u32 address, u32 columns) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(address), "r"(columns) : "memory");
}

// D[tmem] (+)= A[smem desc] x B[smem desc], .kind::f16 (bf16/f16 in, f32 out),
// shape from the instruction descriptor. Issued by one thread.
__device__ __forceinline__ void tcgen05_mma_f16(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc, int accumulate) {
  asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, %4, 0;\n"
               "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, acc;\n}\n" ::"r"(d_tmem),
               "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
               : "memory");
}

// Arrives on `bar` once every tcgen05.mma this thread issued has completed.
__device__ __forceinline__ void tcgen05_commit(u64* bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(
                   smem_address(bar))
               : "memory");
}

__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}

__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// 8 consecutive 32-bit columns of the warp's 32 TMEM lanes (lane i of the warp
// reads lane `address`.lane + i): shape 32x32b, 8 repetitions.
__device__ __forceinline__ void tmem_load_32x32b_x8(u32 address, float (&v)[8]) {
  u32 r[8];
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])
               : "r"(address));
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    v[i] = __uint_as_float(r[i]);
  }
}

} // namespace kda
