// kdajit fragment: tcgen05/proxy_ops
// The sm_90a proxy of tcgen05/ops (issue 5, item 3): the same names, so the
// fused kernel's source is the Blackwell kernel's except for this fragment.
// Replaced: tensor memory is a per-CTA fp32 image in global memory
// (p.workspace + CTA x TMEM_IMAGE_BYTES, column-major: [column][128 lanes]);
// tcgen05.mma is computed by the issuing warp in fp32 from bf16 operands read
// through the same host-encoded descriptors (decoded here: start address,
// leading and stride byte offsets, the fixed bits 46-48, no swizzle or the
// 128-byte swizzle as an XOR of address bits 4-6 with bits 7-9) and the
// same instruction descriptor (M, N, bf16 inputs, fp32 D, K-major A and B);
// an encoding it does not model traps instead of computing something else.
// tcgen05.commit becomes: the warp's writes fenced, then one mbarrier arrival.
// Kept: every SMEM buffer, barrier, role and phase of the fused kernel.
namespace kda {

struct TmemSpace {
  u32 base;     // "address" of lane 0, column 0 as tcgen05.alloc would write it (lane << 16 | column)
  float* image; // [column][lane] fp32
};

__device__ __forceinline__ void tmem_allocate_warp(u32* slot, u32 columns) {
  if (columns > static_cast<u32>(kda_plan::TMEM_COLUMNS)) {
    __trap(); // more than the image holds
  }
  if ((threadIdx.x & 31) == 0) {
    *slot = 0u;
  }
  __syncwarp();
}

template <class Params>
__device__ __forceinline__ TmemSpace tmem_open(const Params& p, const u32* slot) {
  const i64 cta = static_cast<i64>(blockIdx.y) * gridDim.x + blockIdx.x;
  TmemSpace t;
  t.base = *slot;
  t.image = reinterpret_cast<float*>(p.workspace + cta * static_cast<i64>(kda_plan::TMEM_IMAGE_BYTES));
  return t;
}

__device__ __forceinline__ void tmem_free_warp(const TmemSpace&, u32) {}

__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
  __threadfence_block();
}

__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
  __threadfence_block();
}

__device__ __forceinline__ float* tmem_cell(const TmemSpace& t, u32 lane, u32 column) {
  return t.image + static_cast<i64>(column) * 128 + lane;
}

__device__ __forceinline__ u32 tmem_this_lane() {
  return 32u * ((threadIdx.x >> 5) & 3u) + (threadIdx.x & 31u);
}

__device__ __forceinline__ void tmem_load8(const TmemSpace& t, u32 column, float (&v)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    v[i] = *tmem_cell(t, tmem_this_lane(), column + i);
  }
}

__device__ __forceinline__ void tmem_store4(const TmemSpace& t, u32 column, const u32 (&v)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    *tmem_cell(t, tmem_this_lane(), column + i) = __uint_as_float(v[i]);
  }
}

__device__ __forceinline__ void tmem_store8(const TmemSpace& t, u32 column, const u32 (&v)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    *tmem_cell(t, tmem_this_lane(), column + i) = __uint_as_float(v[i]);
  }
}

__device__ __forceinline__ void tmem_wait_store() {}

// The fields of a tcgen05 SMEM descriptor this proxy models (no swizzle or
// the 128-byte swizzle, relative leading offset, base offset 0, fixed bits
// 46-48 = 0b001).
struct ProxyOperand {
  u32 start, lbo, sbo;
  bool swizzle128;
};

__device__ __forceinline__ ProxyOperand proxy_operand(u64 desc) {
  const u32 fixed = static_cast<u32>((desc >> 46) & 7u);
  const u32 base_offset = static_cast<u32>((desc >> 49) & 7u);
  const u32 absolute = static_cast<u32>((desc >> 52) & 1u);
  const u32 swizzle = static_cast<u32>(desc >> 61);
  if (fixed != 1u || base_offset != 0u || absolute != 0u || (swizzle != 0u && swizzle != 2u)) {
    __trap();
  }
  ProxyOperand o;
  o.start = static_cast<u32>(desc & 0x3fffu) << 4;
  o.lbo = static_cast<u32>((desc >> 16) & 0x3fffu) << 4;
  o.sbo = static_cast<u32>((desc >> 32) & 0x3fffu) << 4;
  o.swizzle128 = swizzle == 2u;
  return o;
}

// Element (row, k < 16) of a K-major operand. Without swizzle: 8-row x 16-byte
// core matrices, `lbo` apart along K and `sbo` apart along M / N. With the
// 128-byte swizzle: rows of 128 B in 8-row atoms `sbo` apart, K from the start
// address on, and the 16-byte chunk index (address bits 4-6) XORed with the
// row inside the atom (address bits 7-9), as the hardware applies it.
__device__ __forceinline__ float proxy_element(const ProxyOperand& o, u32 row, u32 k) {
  u32 address = 0;
  if (o.swizzle128) {
    const u32 linear = o.start + (row >> 3) * o.sbo + (row & 7u) * 128u + k * 2u;
    address = linear ^ (((linear >> 7) & 7u) << 4);
  } else {
    address = o.start + (row >> 3) * o.sbo + (k >> 3) * o.lbo + (row & 7u) * 16u + (k & 7u) * 2u;
  }
  u16 bits;
  asm volatile("ld.shared.b16 %0, [%1];" : "=h"(bits) : "r"(address));
  return bf16_bits_to_float(bits);
}

struct ProxyShape {
  u32 m, n;
};

// M and N of a .kind::f16 instruction descriptor this proxy models: dense,
// fp32 D, bf16 A and B, no negation, K-major A and B.
__device__ __forceinline__ ProxyShape proxy_shape(u32 idesc) {
  const bool modelled = (idesc & 7u) == 0u && ((idesc >> 4) & 3u) == 1u && ((idesc >> 7) & 7u) == 1u &&
                        ((idesc >> 10) & 7u) == 1u && ((idesc >> 13) & 15u) == 0u;
  ProxyShape s;
  s.n = ((idesc >> 17) & 0x3fu) << 3;
  s.m = ((idesc >> 24) & 0x1fu) << 4;
  if (!modelled || (s.m != 128u && s.m != 64u) || s.n == 0u || s.n > 256u) {
    __trap();
  }
  return s;
}

// The TMEM lane of row m of a D (or TMEM A) matrix with M rows: M 128 lane m;
// M 64 (not .ws) rows 16 w .. 16 w + 15 in lanes 32 w .. 32 w + 15 (layout F).
__device__ __forceinline__ u32 proxy_lane(u32 m, u32 rows) {
  return rows == 128u ? m : 32u * (m >> 4) + (m & 15u);
}

// D[m][d_col + n] (+)= sum over k < 16 of A(m, k) B(n, k): lane l computes rows l, l + 32, ... < M.
template <bool A_IN_TMEM>
__device__ __forceinline__ void proxy_mma(const TmemSpace& t, u32 d_col, u32 a_col, u64 a_desc, u64 b_desc, u32 idesc,
                                          int accumulate) {
  const ProxyShape shape = proxy_shape(idesc);
  const ProxyOperand b = proxy_operand(b_desc);
  ProxyOperand a = {0u, 0u, 0u};
  if (!A_IN_TMEM) {
    a = proxy_operand(a_desc);
  }
  const u32 lane = threadIdx.x & 31u;
  for (u32 m = lane; m < shape.m; m += 32u) {
    float a_row[16];
#pragma unroll
    for (u32 k = 0; k < 16; ++k) {
      if (A_IN_TMEM) {
        const u32 pair = __float_as_uint(*tmem_cell(t, proxy_lane(m, shape.m), a_col + k / 2));
        a_row[k] = bf16_bits_to_float(static_cast<u16>(k % 2 == 0 ? pair & 0xffffu : pair >> 16));
      } else {
        a_row[k] = proxy_element(a, m, k);
      }
    }
    for (u32 n = 0; n < shape.n; ++n) {
      float* const d = tmem_cell(t, proxy_lane(m, shape.m), d_col + n);
      float sum = accumulate ? *d : 0.0f;
#pragma unroll
      for (u32 k = 0; k < 16; ++k) {
        sum = fmaf(a_row[k], proxy_element(b, n, k), sum);
      }
      *d = sum;
    }
  }
  __syncwarp();
}

__device__ __forceinline__ void umma_ss_warp(const TmemSpace& t, u32 d_col, u64 a_desc, u64 b_desc, u32 idesc,
                                             int accumulate) {
  proxy_mma<false>(t, d_col, 0u, a_desc, b_desc, idesc, accumulate);
}

__device__ __forceinline__ void umma_ts_warp(const TmemSpace& t, u32 d_col, u32 a_col, u64 b_desc, u32 idesc,
                                             int accumulate) {
  proxy_mma<true>(t, d_col, a_col, 0ull, b_desc, idesc, accumulate);
}

// Every lane's image writes before the arrival (the waiter's acquire sees them).
__device__ __forceinline__ void umma_commit_warp(u64* bar) {
  __threadfence_block();
  __syncwarp();
  if ((threadIdx.x & 31) == 0) {
    mbarrier_arrive(bar);
  }
  __syncwarp();
}

} // namespace kda
