#include "runtime_kernels.hpp"

#include <unistd.h>

namespace kda::test {

const char* const k_runtime_test_kernels = R"(
// Register fragments of mma.m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"): g = lane / 4, t = lane % 4; the lower half of each .b32
// register holds the element with the lower column (A) or row (B) index.
__device__ unsigned pack_bf16x2(unsigned short lo, unsigned short hi) {
  return static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
}

extern "C" __global__ void kda_test_mma(const unsigned short* a, const unsigned short* b, float* d) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned g = lane >> 2;
  const unsigned t = lane & 3u;
  const unsigned a0 = pack_bf16x2(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  const unsigned a1 = pack_bf16x2(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
  const unsigned a2 = pack_bf16x2(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
  const unsigned a3 = pack_bf16x2(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
  const unsigned b0 = pack_bf16x2(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  const unsigned b1 = pack_bf16x2(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  d[g * 8 + 2 * t] = c0;
  d[g * 8 + 2 * t + 1] = c1;
  d[(g + 8) * 8 + 2 * t] = c2;
  d[(g + 8) * 8 + 2 * t + 1] = c3;
}

extern "C" __global__ void kda_test_smem_reverse(const float* in, float* out, int n) {
  extern __shared__ float staged[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    staged[i] = in[i];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    out[i] = 2.0f * staged[n - 1 - i];
  }
}
)";

const char* const k_static_smem_frame_kernel = R"(
extern "C" __global__ void kda_test_static_smem_frame(const float* in, float* out, int pick) {
  __shared__ float tile[300];
  float local[64]; // indexed by a run-time value: lives in the stack frame
  for (int i = 0; i < 64; ++i) {
    local[i] = in[i * blockDim.x + threadIdx.x];
  }
  for (int i = threadIdx.x; i < 300; i += blockDim.x) {
    tile[i] = in[i];
  }
  __syncthreads();
  out[threadIdx.x] = local[(pick + threadIdx.x) & 63] + tile[299 - threadIdx.x % 300];
}
)";

std::filesystem::path fresh_scratch_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kdajit-test-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

} // namespace kda::test
