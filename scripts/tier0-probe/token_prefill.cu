// Representative token-recurrent KDA kernel (fp32 state in registers, one CTA
// per (sequence, head), thread j = value column j) used only to size the PTX
// that a tier-0 backend would hand to the driver or nvJitLink.
#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(128) token_prefill(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const __nv_bfloat16* g,
    const __nv_bfloat16* beta, const float* a_log, const float* dt_bias, float* state, __nv_bfloat16* out,
    int T, int H, float scale) {
  const int n = blockIdx.x / H, h = blockIdx.x % H, j = threadIdx.x;
  __shared__ float ks[128], qs[128], as[128], red[2][4];
  float s[128];
  float* st = state + ((size_t)(n * H + h)) * 128 * 128;
#pragma unroll
  for (int i = 0; i < 128; ++i) s[i] = st[i * 128 + j];
  const float A = __expf(a_log[h]);
  for (int t = 0; t < T; ++t) {
    const size_t row = ((size_t)(n * T + t) * H + h) * 128;
    const float kk = __bfloat162float(k[row + j]), qq = __bfloat162float(q[row + j]);
    const float x = __bfloat162float(g[row + j]) + dt_bias[h * 128 + j];
    const float sp = x > 20.f ? x : log1pf(__expf(x));
    float k2 = kk * kk, q2 = qq * qq;
    for (int o = 16; o; o >>= 1) { k2 += __shfl_xor_sync(~0u, k2, o); q2 += __shfl_xor_sync(~0u, q2, o); }
    if ((j & 31) == 0) { red[0][j >> 5] = k2; red[1][j >> 5] = q2; }
    __syncthreads();
    const float rk = rsqrtf(red[0][0] + red[0][1] + red[0][2] + red[0][3] + 1e-6f);
    const float rq = rsqrtf(red[1][0] + red[1][1] + red[1][2] + red[1][3] + 1e-6f);
    ks[j] = kk * rk; qs[j] = qq * rq * scale; as[j] = __expf(-A * sp);
    __syncthreads();
    const float b = 1.f / (1.f + __expf(-__bfloat162float(beta[(size_t)(n * T + t) * H + h])));
    float p = 0.f;
#pragma unroll
    for (int i = 0; i < 128; ++i) { s[i] *= as[i]; p += s[i] * ks[i]; }
    const float u = b * (__bfloat162float(v[row + j]) - p);
    float o = 0.f;
#pragma unroll
    for (int i = 0; i < 128; ++i) { s[i] += ks[i] * u; o += s[i] * qs[i]; }
    out[row + j] = __float2bfloat16(o);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 128; ++i) st[i * 128 + j] = s[i];
}
