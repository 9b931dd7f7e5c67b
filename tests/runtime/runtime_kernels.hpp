/// \file
/// Small self-contained kernels for the runtime tests (no includes: NVRTC has
/// built-ins only), shared by the CPU compile tests and the [gpu] tests.
#pragma once

#include <filesystem>
#include <string>

namespace kda::test {

/// Two extern "C" entry points:
///  - kda_test_mma(const unsigned short* a, const unsigned short* b, float* d):
///    one warp, one mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32;
///    a is 16x16 bf16 row-major, b is 16x8 bf16 row-major (K x N), d = a*b is
///    16x8 fp32 row-major.
///  - kda_test_smem_reverse(const float* in, float* out, int n): stages n floats
///    in dynamic SMEM (a plain loop), then writes out[i] = 2 * in[n - 1 - i].
extern const char* const k_runtime_test_kernels;

/// One kernel, kda_test_static_smem_frame(const float* in, float* out, int
/// pick), with 1200 bytes of static SMEM and a 256-byte local array indexed
/// at run time (so a stack frame): out[t] = in[((pick + t) & 63) * blockDim.x
/// + t] + in[299 - t % 300].
extern const char* const k_static_smem_frame_kernel;

/// A fresh, empty directory under the system temp dir for one test
/// (<tmp>/kdajit-test-<pid>-<name>); the test removes it when done.
std::filesystem::path fresh_scratch_dir(const std::string& name);

} // namespace kda::test
