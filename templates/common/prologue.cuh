// kdajit fragment: common/prologue
// Self-contained device helpers: kernels compile under NVRTC with no include
// path (a host may have libnvrtc but no toolkit headers), so bf16 is handled as
// raw bits through PTX conversions and every tensor-core instruction is inline PTX.
namespace kda {

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

struct bf16 {
  u16 bits;
};

// A TMA tensor map (the driver's CUtensorMap: 128 opaque bytes, 64-byte
// aligned), passed by value in the kernel parameters.
struct alignas(64) TensorMapBytes {
  u64 words[16];
};

__device__ __forceinline__ float bf16_to_float(bf16 x) {
  return __uint_as_float(static_cast<u32>(x.bits) << 16);
}

__device__ __forceinline__ float bf16_bits_to_float(u16 bits) {
  return __uint_as_float(static_cast<u32>(bits) << 16);
}

// Two floats to a bf16x2 register: `lo` in the low half (the lower column index).
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Round to nearest even, as __float2bfloat16_rn.
__device__ __forceinline__ u16 float_to_bf16_bits(float x) {
  u16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}

// The same bits by the paired conversion with a zero high half: one
// fixed-latency ALU instruction (F2FP), where ptxas may issue
// cvt.rn.bf16.f32 as F2F on the conversion unit, whose variable latency sat
// on the chunk-16 prepare step's center chain. It may take a register more
// (tcgen05's 64-register kernels spill with it), so only that step uses it.
__device__ __forceinline__ u16 float_to_bf16_bits_alu(float x) {
  return static_cast<u16>(pack_bf16x2(x, 0.0f));
}

__device__ __forceinline__ bf16 float_to_bf16(float x) {
  bf16 r;
  r.bits = float_to_bf16_bits(x);
  return r;
}

__device__ __forceinline__ float round_bf16(float x) {
  return bf16_bits_to_float(float_to_bf16_bits(x));
}

__device__ __forceinline__ u32 pack_bits(u16 lo, u16 hi) {
  return static_cast<u32>(lo) | (static_cast<u32>(hi) << 16);
}

__device__ __forceinline__ float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ float fast_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// 1 / (1 + 2^(-x log2 e)) with the approximate, flush-to-zero ex2 and rcp
// (two MUFU operations, no denormal fix-ups): within a few ulp, exactly 0 and
// 1 at the extremes (2^(large) = inf, 1 / inf = 0), never NaN for finite x.
__device__ __forceinline__ float sigmoid(float x) {
  return fast_rcp(1.0f + fast_exp2(x * -1.4426950408889634f));
}

// D = A * B + D for one m16n8k16 tile, bf16 inputs, fp32 accumulators
// (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type").
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// D = A * B + D for one m16n8k8 tile, tf32 inputs, fp32 accumulators (PTX ISA,
// "Matrix Fragments for mma.m16n8k8" .tf32: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4),
// a3 (g + 8, t + 4); b0 (k = t, n = g), b1 (k = t + 4, n = g); d as for m16n8k16).
__device__ __forceinline__ void mma_tf32_1688(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// bar.sync on a named barrier (0 is __syncthreads): waits until `threads`
// threads (a multiple of 32) have arrived or synced on it.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// bar.arrive: counts this warp towards the barrier without waiting; its
// earlier SMEM writes are visible to the threads that then pass bar.sync on
// it (producer / consumer hand-off).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ u32 smem_address(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// Four 8x8 b16 matrices from SMEM; lanes 8j..8j+7 give the row addresses of
// matrix j (16-byte aligned, shared space). Thread (g = lane / 4, t = lane % 4)
// receives row g, elements 2t and 2t+1 of each matrix (PTX ISA, "ldmatrix").
__device__ __forceinline__ void ldmatrix_x4_shared(u32 (&r)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// The same, transposed: thread (g, t) receives rows 2t and 2t+1 of column g.
__device__ __forceinline__ void ldmatrix_x4_trans_shared(u32 (&r)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Four 8x8 b16 matrices to SMEM, the inverse of ldmatrix_x4_shared: lanes
// 8j..8j+7 give the row addresses of matrix j (16-byte aligned, shared
// space); thread (g, t) supplies row g, elements 2t and 2t+1 of each (PTX
// ISA, "stmatrix"; sm_90 and later).
__device__ __forceinline__ void stmatrix_x4_shared(u32 address, const u32 (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};" ::"r"(address), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], const void* row) {
  ldmatrix_x4_shared(r, smem_address(row));
}

__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], const void* row) {
  ldmatrix_x4_trans_shared(r, smem_address(row));
}

// 16-byte asynchronous copy global -> shared; `valid` false zero-fills.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_address(smem)), "l"(gmem), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;");
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// A kernel launched after this one with programmatic stream serialization
// (schedule field programmatic_launch) may be scheduled once every CTA of this
// grid has passed here; it still waits for this grid's results in
// wait_prior_grid. No effect before sm_90 or without such a launch.
__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Waits until the grid launched before this one on its stream has completed
// and its writes are visible; returns at once when this kernel was launched
// without programmatic stream serialization (or before sm_90).
__device__ __forceinline__ void wait_prior_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Waits for every cp.async this thread has issued, committed or not.
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}

} // namespace kda
