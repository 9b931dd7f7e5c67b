// [gpu]: run only on the H200 machine (tests/gpu_tests_or_skip.sh). NVRTC
// compiles, the driver loads and launches, results are checked on the CPU.
#include "compiler/bf16.hpp"
#include "compiler/target.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/loaded_module.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/ptxas_log.hpp"
#include "runtime/tensor_map_encoder.hpp"
#include "device_array.hpp"
#include "runtime_kernels.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>

using namespace kda;
using namespace kda::runtime;
using Catch::Contains;

namespace {

/// Device memory for one test; freed on scope exit.
class DeviceBuffer {
public:
  explicit DeviceBuffer(std::size_t bytes) : m_bytes(bytes) {
    ensure_current_context();
    KDA_CU(cuMemAlloc, &m_pointer, bytes);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { driver_api().cuMemFree(m_pointer); }

  template <typename T>
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() * sizeof(T) == m_bytes);
    KDA_CU(cuMemcpyHtoD, m_pointer, host.data(), m_bytes);
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(m_bytes / sizeof(T));
    KDA_CU(cuMemcpyDtoH, host.data(), m_pointer, m_bytes);
    return host;
  }
  CUdeviceptr* address() { return &m_pointer; }

private:
  CUdeviceptr m_pointer = 0;
  std::size_t m_bytes;
};

CompileRequest test_kernels_request(const std::string& target_name) {
  CompileRequest request;
  request.source = test::k_runtime_test_kernels;
  request.label = "kda_runtime_test.cu";
  request.target = *find_target(target_name);
  request.entry_points = {"kda_test_mma", "kda_test_smem_reverse"};
  return request;
}

CompileRequest framed_kernel_request(const std::string& target_name) {
  CompileRequest request;
  request.source = test::k_static_smem_frame_kernel;
  request.label = "kda_runtime_test_frame.cu";
  request.target = *find_target(target_name);
  request.entry_points = {"kda_test_static_smem_frame"};
  return request;
}

LoadedModule load_test_kernels(const std::string& target_name, int max_dynamic_smem_bytes = 0) {
  const CompileRequest request = test_kernels_request(target_name);
  const CompiledModule compiled = NvrtcCompiler().compile(request);
  return LoadedModule::load(compiled.cubin, request.entry_points, max_dynamic_smem_bytes);
}

} // namespace

// The test machines: an H200 (141 GB) or an H100 SXM (80 GB), both CC 9.0 with
// 132 SMs; the memory total tells the driver's figure is the device's, not a
// default.
TEST_CASE("gpu: device info of the H200 or H100 test machine", "[gpu][runtime]") {
  REQUIRE(driver_status().available);
  const DeviceInfo info = current_device_info();
  INFO(info.to_string());
  CHECK(info.ordinal == 0);
  CHECK(info.cc_major == 9);
  CHECK(info.cc_minor == 0);
  CHECK(info.sm_count == 132);
  CHECK(info.max_smem_optin_per_block == find_target("sm_90a")->max_smem_per_block);
  CHECK(info.total_memory_bytes > (70ull << 30));
  CHECK_FALSE(info.name.empty());
  CHECK(list_devices().size() == static_cast<std::size_t>(driver_status().device_count));
}

TEST_CASE("gpu: one mma.sync m16n8k16 bf16 matches the CPU product", "[gpu][runtime]") {
  LoadedModule module = load_test_kernels("sm_90");
  const LoadedFunction& mma = module.function("kda_test_mma");
  CHECK(mma.attributes.num_regs > 0);
  CHECK(mma.attributes.binary_version == 90);
  CHECK(mma.attributes.max_threads_per_block >= 32);

  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<std::uint16_t> a(16 * 16);
  std::vector<std::uint16_t> b(16 * 8);
  for (std::uint16_t& x : a) {
    x = float_to_bf16(value(rng)).bits;
  }
  for (std::uint16_t& x : b) {
    x = float_to_bf16(value(rng)).bits;
  }
  DeviceBuffer a_device(a.size() * 2);
  DeviceBuffer b_device(b.size() * 2);
  DeviceBuffer d_device(16 * 8 * sizeof(float));
  a_device.upload(a);
  b_device.upload(b);
  void* args[] = {a_device.address(), b_device.address(), d_device.address()};
  launch(mma.function, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, nullptr, args);
  KDA_CU(cuCtxSynchronize);
  const std::vector<float> d = d_device.download<float>();

  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double expected = 0.0;
      double magnitude = 0.0;
      for (int k = 0; k < 16; ++k) {
        const double product = static_cast<double>(bf16_to_float(Bf16{a[m * 16 + k]})) *
                               static_cast<double>(bf16_to_float(Bf16{b[k * 8 + n]}));
        expected += product;
        magnitude += std::abs(product);
      }
      INFO("d[" << m << "][" << n << "]");
      CHECK(std::abs(d[m * 8 + n] - expected) <= 1e-5 * magnitude + 1e-6);
    }
  }
}

TEST_CASE("gpu: 200 KiB of dynamic SMEM after opting in", "[gpu][runtime]") {
  constexpr int k_bytes = 200 * 1024;
  constexpr int k_count = k_bytes / static_cast<int>(sizeof(float));
  LoadedModule module = load_test_kernels("sm_90a");
  const CUfunction reverse = module.function("kda_test_smem_reverse").function;
  CHECK(module.function("kda_test_smem_reverse").attributes.max_dynamic_shared_size_bytes < k_bytes);

  std::vector<float> in(k_count);
  for (int i = 0; i < k_count; ++i) {
    in[i] = static_cast<float>(i % 1000) - 500.0f;
  }
  DeviceBuffer in_device(in.size() * sizeof(float));
  DeviceBuffer out_device(in.size() * sizeof(float));
  in_device.upload(in);
  int count = k_count;
  void* args[] = {in_device.address(), out_device.address(), &count};

  // Without the opt-in the launch is rejected, and says so.
  CHECK_THROWS_AS(launch(reverse, Dim3{1, 1, 1}, Dim3{256, 1, 1}, k_bytes, nullptr, args), DriverError);

  module.set_max_dynamic_smem("kda_test_smem_reverse", k_bytes);
  CHECK(module.function("kda_test_smem_reverse").attributes.max_dynamic_shared_size_bytes == k_bytes);
  launch(reverse, Dim3{1, 1, 1}, Dim3{256, 1, 1}, k_bytes, nullptr, args);
  KDA_CU(cuCtxSynchronize);
  const std::vector<float> out = out_device.download<float>();
  int wrong = 0;
  for (int i = 0; i < k_count; ++i) {
    wrong += out[i] != 2.0f * in[k_count - 1 - i] ? 1 : 0;
  }
  CHECK(wrong == 0);
}

TEST_CASE("gpu: modules load in the current context and move", "[gpu][runtime]") {
  const CUcontext context = ensure_current_context();
  LoadedModule first = load_test_kernels("sm_90a", 64 * 1024);
  CHECK(first.context() == context);
  CHECK(first.function("kda_test_smem_reverse").attributes.max_dynamic_shared_size_bytes == 64 * 1024);
  const CUmodule handle = first.module();
  LoadedModule second = std::move(first);
  CHECK(second.module() == handle);
  CHECK(first.module() == nullptr); // NOLINT(bugprone-use-after-move): moved-from state is documented
  CHECK_THROWS_AS(second.function("kda_not_loaded"), InternalError);
}

// The driver's encoder on the H200 (issue 5: TMA tensor maps exercised on a
// GPU that has TMA): the token-rows map of a real allocation encodes, and
// requests the host check refuses are refused by the driver too.
TEST_CASE("gpu: cuTensorMapEncodeTiled accepts the checked maps and refuses the broken ones", "[gpu][runtime][tma]") {
  kda::runtime::ensure_current_context();
  const std::uint64_t tokens = 1000;
  const std::uint64_t heads = 3;
  kda::test::DeviceArray v(tokens * heads * 128 * 2);
  const kda::TensorMapRequest ok = kda::token_rows_tensor_map(reinterpret_cast<std::uint64_t>(v.data()),
                                                              kda::TmaDataType::bf16, tokens, heads, 128, 16,
                                                              kda::TmaSwizzle::none);
  const kda::runtime::EncodedTensorMap map = kda::runtime::encode_tensor_map(ok, "v");
  bool any = false;
  for (std::uint64_t word : map) {
    any = any || word != 0;
  }
  CHECK(any);
  CHECK(kda::runtime::driver_encode_result(ok) == CUDA_SUCCESS);
  for (std::uint32_t m_tile : {64u, 128u}) { // the checkpoint rows' map (6 matrices of [128][128] fit in v)
    const kda::TensorMapRequest stack = kda::swizzled_matrix_stack_tensor_map(
        reinterpret_cast<std::uint64_t>(v.data()), kda::TmaDataType::bf16, 6, 128, 128, 64, m_tile);
    CHECK(kda::runtime::driver_encode_result(stack) == CUDA_SUCCESS);
  }
  for (int broken = 0; broken < 4; ++broken) {
    kda::TensorMapRequest r = ok;
    switch (broken) {
    case 0: r.box_dim[2] = 257; break;
    case 1: r.global_strides[0] = 264; break;
    case 2: r.global_address += 8; break;
    case 3: r.swizzle = kda::TmaSwizzle::b128; break; // 256 B inner box over a 128 B span
    }
    INFO("broken rule " << broken);
    CHECK_FALSE(kda::tensor_map_problems(r).empty());
    CHECK(kda::runtime::driver_encode_result(r) != CUDA_SUCCESS);
    CHECK_THROWS_AS(kda::runtime::encode_tensor_map(r, "v"), kda::InternalError);
  }
}

TEST_CASE("gpu: the driver's registers, stack and static SMEM are the module's recorded resources", "[gpu][runtime]") {
  // What the cache records per entry point (registers, stack frame and static
  // SMEM from the cubin) against the loaded function's own attributes, for the
  // test kernels: dynamic SMEM only, none, and 1200 static bytes with a frame.
  for (const char* target : {"sm_90", "sm_90a"}) {
    for (const CompileRequest& request : {test_kernels_request(target), framed_kernel_request(target)}) {
      const CompiledModule compiled = NvrtcCompiler().compile(request);
      const LoadedModule module = LoadedModule::load(compiled.cubin, request.entry_points);
      for (const std::string& entry : request.entry_points) {
        INFO(target << " " << entry);
        const FunctionAttributes& a = module.function(entry).attributes;
        const ResourceUsage& r = compiled.resources.at(entry);
        CHECK(a.num_regs == r.registers);
        CHECK(a.local_size_bytes == r.stack_frame_bytes);
        CHECK(a.shared_size_bytes == r.static_smem_bytes);
      }
    }
  }
}

TEST_CASE("gpu: a compile NVRTC serves from its own cache keeps every resource, spills included", "[gpu][runtime]") {
  // With a driver present NVRTC caches compiles (CUDA_CACHE_PATH); the second
  // compile of one source returns its cubin without ptxas lines. The module
  // reports the same resources either way, and a kernel with a stack frame is
  // compiled again past that cache for its spills rather than refused.
  for (const CompileRequest& request : {test_kernels_request("sm_90a"), framed_kernel_request("sm_90a")}) {
    const CompiledModule first = NvrtcCompiler().compile(request);
    const CompiledModule second = NvrtcCompiler().compile(request);
    CHECK(second.cubin == first.cubin);
    for (const std::string& entry : request.entry_points) {
      INFO(entry << "\nfirst log:\n" << first.log << "\nsecond log:\n" << second.log);
      CHECK(second.resources.at(entry) == first.resources.at(entry));
      if (first.resources.at(entry).stack_frame_bytes > 0) {
        CHECK(parse_ptxas_resource_log(second.log).contains(entry));
      }
    }
    if (std::getenv("CUDA_CACHE_DISABLE") == nullptr) {
      // the second compile was served from NVRTC's cache: without a frame the
      // log says so; with one, the probe compile's log replaced it
      const bool framed = request.entry_points.front() == "kda_test_static_smem_frame";
      INFO(second.log);
      CHECK_THAT(second.log, Contains(framed ? "kdajit_ptxas_log_probe_" : "kdajit: note: this log has no ptxas lines"));
    }
  }
}
