// kdajit from C++: one packed call of three sequences (recurrent_kda_prefill),
// then the same call planned once and run with a caller-owned workspace,
// checked against a double-precision CPU reference. Tensors are allocated
// with the CUDA driver API; kdajit runs in the current context.
//
//   build against an installed kdajit: examples/CMakeLists.txt
//   run:                               ./prefill_cpp
#include "kdajit/kda.hpp"
#include "reference.h"

#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::fprintf(stderr, "%s failed: %s\n", what, name != nullptr ? name : "?");
    std::exit(2);
  }
}

// A device copy of host data.
struct DeviceArray {
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;
  template <typename T>
  explicit DeviceArray(const std::vector<T>& host) : bytes(host.size() * sizeof(T)) {
    check(cuMemAlloc(&ptr, bytes), "cuMemAlloc");
    check(cuMemcpyHtoD(ptr, host.data(), bytes), "cuMemcpyHtoD");
  }
  ~DeviceArray() { cuMemFree(ptr); }
  void* data() const { return reinterpret_cast<void*>(ptr); }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(bytes / sizeof(T));
    check(cuMemcpyDtoH(host.data(), ptr, bytes), "cuMemcpyDtoH");
    return host;
  }
};

// Uniform in [-1, 1) from a fixed seed (the example's inputs).
float uniform(unsigned& seed) {
  seed = seed * 1664525u + 1013904223u;
  return static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
}

std::vector<std::uint16_t> bf16_random(std::size_t n, unsigned& seed, float amplitude, std::vector<float>& as_float) {
  std::vector<std::uint16_t> bits(n);
  as_float.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    bits[i] = example_to_bf16(amplitude * uniform(seed));
    as_float[i] = example_from_bf16(bits[i]);
  }
  return bits;
}

std::vector<float> bf16_values(const std::vector<std::uint16_t>& bits) {
  std::vector<float> x(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    x[i] = example_from_bf16(bits[i]);
  }
  return x;
}

} // namespace

int main() {
  constexpr std::int64_t H = 4, D = EXAMPLE_D;
  const std::vector<std::int32_t> offsets = {0, 100, 164, 420}; // three sequences, 420 tokens
  const std::int64_t T = offsets.back(), N = static_cast<std::int64_t>(offsets.size()) - 1;
  check(cuInit(0), "cuInit");
  CUdevice device = 0;
  CUcontext context = nullptr;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  unsigned seed = 2024;
  std::vector<float> q, k, v, g, beta;
  const std::size_t rows = static_cast<std::size_t>(T * H * D);
  DeviceArray dq(bf16_random(rows, seed, 1.0f, q)), dk(bf16_random(rows, seed, 1.0f, k));
  DeviceArray dv(bf16_random(rows, seed, 1.0f, v)), dg(bf16_random(rows, seed, 2.0f, g));
  DeviceArray dbeta(bf16_random(static_cast<std::size_t>(T * H), seed, 2.0f, beta));
  std::vector<float> a_log(H), dt_bias(H * D), state0(static_cast<std::size_t>(N * H * D * D));
  for (float& x : a_log) x = 0.5f * (uniform(seed) + 1.0f);
  for (float& x : dt_bias) x = 0.5f * (uniform(seed) + 1.0f);
  for (float& x : state0) x = 0.1f * uniform(seed);
  DeviceArray da_log(a_log), ddt_bias(dt_bias), dstate(state0), dcu(offsets);
  DeviceArray dout(std::vector<std::uint16_t>(rows, 0xffff)); // poisoned: every row must be written

  kda::PrefillArgs a;
  a.q = kda::TensorRef::contiguous(dq.data(), kda::ElementType::bf16, {1, T, H, D});
  a.k = kda::TensorRef::contiguous(dk.data(), kda::ElementType::bf16, {1, T, H, D});
  a.v = kda::TensorRef::contiguous(dv.data(), kda::ElementType::bf16, {1, T, H, D});
  a.g = kda::TensorRef::contiguous(dg.data(), kda::ElementType::bf16, {1, T, H, D});
  a.beta = kda::TensorRef::contiguous(dbeta.data(), kda::ElementType::bf16, {1, T, H});
  a.a_log = kda::TensorRef::contiguous(da_log.data(), kda::ElementType::fp32, {H});
  a.dt_bias = kda::TensorRef::contiguous(ddt_bias.data(), kda::ElementType::fp32, {H, D});
  a.cu_seqlens = kda::TensorRef::contiguous(dcu.data(), kda::ElementType::i32, {N + 1});
  a.initial_state = kda::TensorRef::contiguous(dstate.data(), kda::ElementType::fp32, {N, H, D, D});
  a.out = kda::TensorRef::contiguous(dout.data(), kda::ElementType::bf16, {1, T, H, D});

  // The reference: each sequence from its initial state.
  std::vector<double> ref_state(state0.begin(), state0.end()), ref_out(rows);
  for (std::int64_t n = 0; n < N; ++n) {
    const std::size_t first = static_cast<std::size_t>(offsets[n] * H * D);
    example_reference(offsets[n + 1] - offsets[n], H, q.data() + first, k.data() + first, v.data() + first,
                      g.data() + first, beta.data() + offsets[n] * H, a_log.data(), dt_bias.data(), a.scale,
                      a.lower_bound, ref_state.data() + n * H * D * D, ref_out.data() + first);
  }
  try {
    const kda::PrefillResult r = kda::recurrent_kda_prefill(a);
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    const std::vector<float> out = bf16_values(dout.download<std::uint16_t>());
    const std::vector<float> state = dstate.download<float>();
    const double out_error = example_relative_rms(out.data(), ref_out.data(), static_cast<std::int64_t>(rows));
    const double state_error = example_relative_rms(state.data(), ref_state.data(), static_cast<std::int64_t>(state.size()));
    std::printf("recurrent_kda_prefill: %lld tokens in %lld sequences, %lld heads, fp32 state in place: %s on %s\n",
                static_cast<long long>(T), static_cast<long long>(N), static_cast<long long>(H), r.schedule.c_str(),
                r.target.c_str());
    std::printf("  relative RMS error against the fp64 reference: output %.2e, final state %.2e\n", out_error,
                state_error);

    // Planned: the same signature again, from the initial state, with a workspace of ours.
    check(cuMemcpyHtoD(dstate.ptr, state0.data(), dstate.bytes), "cuMemcpyHtoD");
    const kda::PrefillPlan plan(a);
    CUdeviceptr workspace = 0;
    check(cuMemAlloc(&workspace, static_cast<std::size_t>(plan.workspace_bytes())), "cuMemAlloc");
    plan.run(a, reinterpret_cast<void*>(workspace), plan.workspace_bytes());
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    const bool same = bf16_values(dout.download<std::uint16_t>()) == out && dstate.download<float>() == state;
    std::printf("PrefillPlan::run (%lld-byte workspace): %s the eager call's output and state\n",
                static_cast<long long>(plan.workspace_bytes()), same ? "the same bits as" : "DIFFERENT from");
    cuMemFree(workspace);
    const bool ok = out_error <= 1e-2 && state_error <= 1e-2 && same;
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
  } catch (const kda::Error& e) {
    std::fprintf(stderr, "kdajit: %s\n", e.what());
    return 1;
  }
}
