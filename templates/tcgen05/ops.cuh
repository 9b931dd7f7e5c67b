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

// ---- the fused kernels' view of tensor memory (templates/tcgen05/fused_*) ----
// The sm_90a proxy (tcgen05/proxy_ops) defines the same names with TMEM in a
// per-CTA global image and the MMAs computed by the issuing warp: the fused
// kernel's source is otherwise the same on both.
namespace kda {

// The CTA's tensor memory: the base address tcgen05.alloc wrote (lane 0, its first column).
struct TmemSpace {
  u32 base;
};

// One full warp: allocates `columns` and lets other CTAs allocate after it.
__device__ __forceinline__ void tmem_allocate_warp(u32* slot, u32 columns) {
  tmem_alloc(slot, columns);
  tmem_relinquish_alloc_permit();
}

template <class Params>
__device__ __forceinline__ TmemSpace tmem_open(const Params&, const u32* slot) {
  return TmemSpace{*slot};
}

// One full warp, after every TMEM access of the CTA.
__device__ __forceinline__ void tmem_free_warp(const TmemSpace& t, u32 columns) {
  tmem_dealloc(t.base, columns);
}

// Lane quarter of the calling warp: a warp reaches TMEM lanes 32 (warp % 4) .. + 31 (PTX ISA, tcgen05 data movement).
__device__ __forceinline__ u32 tmem_warp_lanes(const TmemSpace& t, u32 column) {
  return t.base + ((32u * ((threadIdx.x >> 5) & 3u)) << 16) + column;
}

// 8 columns of this thread's lane, fp32 (waits for the load).
__device__ __forceinline__ void tmem_load8(const TmemSpace& t, u32 column, float (&v)[8]) {
  tmem_load_32x32b_x8(tmem_warp_lanes(t, column), v);
}

// 4 or 8 columns of this thread's lane; tmem_wait_store before another thread relies on them.
__device__ __forceinline__ void tmem_store4(const TmemSpace& t, u32 column, const u32 (&v)[4]) {
  asm volatile("tcgen05.st.sync.aligned.32x32b.x4.b32 [%0], {%1, %2, %3, %4};" ::"r"(tmem_warp_lanes(t, column)),
               "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}

__device__ __forceinline__ void tmem_store8(const TmemSpace& t, u32 column, const u32 (&v)[8]) {
  asm volatile("tcgen05.st.sync.aligned.32x32b.x8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};" ::"r"(
                   tmem_warp_lanes(t, column)),
               "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]), "r"(v[4]), "r"(v[5]), "r"(v[6]), "r"(v[7])
               : "memory");
}

__device__ __forceinline__ void tmem_wait_store() {
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
}

// The MMA warp: D[d_col ..] (+)= A x B^T with A and B from SMEM descriptors;
// lane 0 issues (tcgen05.mma is a single-thread instruction).
__device__ __forceinline__ void umma_ss_warp(const TmemSpace& t, u32 d_col, u64 a_desc, u64 b_desc, u32 idesc,
                                             int accumulate) {
  if ((threadIdx.x & 31) == 0) {
    tcgen05_mma_f16(t.base + d_col, a_desc, b_desc, idesc, accumulate);
  }
  __syncwarp();
}

// The same with A in TMEM (columns a_col .., bf16 pairs, lanes = rows of A).
__device__ __forceinline__ void umma_ts_warp(const TmemSpace& t, u32 d_col, u32 a_col, u64 b_desc, u32 idesc,
                                             int accumulate) {
  if ((threadIdx.x & 31) == 0) {
    asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], [%1], %2, %3, acc;\n}\n" ::"r"(t.base + d_col),
                 "r"(t.base + a_col), "l"(b_desc), "r"(idesc), "r"(accumulate)
                 : "memory");
  }
  __syncwarp();
}

// The MMA warp: `bar` receives one arrival once every MMA issued so far has completed.
__device__ __forceinline__ void umma_commit_warp(u64* bar) {
  if ((threadIdx.x & 31) == 0) {
    tcgen05_commit(bar);
  }
  __syncwarp();
}

} // namespace kda
