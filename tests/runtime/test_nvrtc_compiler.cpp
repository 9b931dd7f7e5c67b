// NVRTC compiles on the CPU (no GPU needed): every known target, failures with
// their log and repro file, missing entry points, concurrent compiles.
#include "compiler/errors.hpp"
#include "runtime/cubin_symbols.hpp"
#include "runtime/entry_resources.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/ptxas_log.hpp"
#include "runtime_kernels.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <future>

using namespace kda;
using Catch::Contains;
using runtime::CompiledModule;
using runtime::CompileRequest;

namespace {

Target target_named(const std::string& name) {
  const std::optional<Target> t = find_target(name);
  REQUIRE(t.has_value());
  return *t;
}

CompileRequest test_kernels_request(const Target& target) {
  CompileRequest request;
  request.source = test::k_runtime_test_kernels;
  request.label = "kda_runtime_test.cu";
  request.target = target;
  request.entry_points = {"kda_test_mma", "kda_test_smem_reverse"};
  return request;
}


} // namespace

TEST_CASE("nvrtc compiler: default options are exact and ordered", "[runtime][nvrtc]") {
  CHECK(runtime::default_compile_options(target_named("sm_90a")) ==
        std::vector<std::string>{"-arch=sm_90a", "-std=c++17", "--ptxas-options=-v", "-default-device"});
  CHECK(runtime::default_compile_options(target_named("sm_100f"), runtime::CxxStandard::cxx20) ==
        std::vector<std::string>{"-arch=sm_100f", "-std=c++20", "--ptxas-options=-v", "-default-device"});
}

TEST_CASE("nvrtc compiler: mma.sync kernel compiles to a cubin for every target", "[runtime][nvrtc]") {
  const runtime::NvrtcCompiler compiler;
  for (const Target& target : all_targets()) {
    INFO("target " << target.name);
    const CompiledModule module = compiler.compile(test_kernels_request(target));
    CHECK(test::is_elf(module.cubin));
    CHECK_FALSE(module.ptx.has_value());
    CHECK(module.target_name == target.name);
    CHECK(module.options == runtime::default_compile_options(target));
    CHECK(module.nvrtc_version == compiler.version());
    CHECK(module.compile_ms > 0.0);
    CHECK_THAT(module.log, Contains("Compiling entry function 'kda_test_mma' for '" + target.arch() + "'"));
    REQUIRE(module.resources.size() == 2);
    const runtime::ResourceUsage& mma = module.resources.at("kda_test_mma");
    CHECK(mma.registers > 0);
    CHECK(mma.barriers == 0);
    CHECK(mma.spill_store_bytes == 0);
    const runtime::ResourceUsage& reverse = module.resources.at("kda_test_smem_reverse");
    CHECK(reverse.registers > 0);
    CHECK(reverse.barriers == 1);
    CHECK(reverse.static_smem_bytes == 0); // its SMEM is dynamic
  }
}

TEST_CASE("nvrtc compiler: PTX on request, extra options after the defaults", "[runtime][nvrtc]") {
  CompileRequest request = test_kernels_request(target_named("sm_90a"));
  request.want_ptx = true;
  request.standard = runtime::CxxStandard::cxx20;
  request.extra_options = {"--maxrregcount=32"};
  const CompiledModule module = runtime::NvrtcCompiler().compile(request);
  REQUIRE(module.ptx.has_value());
  CHECK_THAT(*module.ptx, Contains(".target sm_90a"));
  CHECK_THAT(*module.ptx, Contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  CHECK(module.options == std::vector<std::string>{"-arch=sm_90a", "-std=c++20", "--ptxas-options=-v",
                                                   "-default-device", "--maxrregcount=32"});
  CHECK(module.resources.at("kda_test_mma").registers <= 32);
}

TEST_CASE("nvrtc compiler: a syntax error throws with log, options and a repro file", "[runtime][nvrtc]") {
  const std::filesystem::path dir = test::fresh_scratch_dir("syntax_error");
  CompileRequest request;
  request.source = "extern \"C\" __global__ void kda_broken(float* out) {\n  int x = ;\n  out[0] = x;\n}\n";
  request.label = "kda_prefill_broken_c16.cu";
  request.target = target_named("sm_90a");
  request.entry_points = {"kda_broken"};
  request.failure_dir = dir;
  try {
    runtime::NvrtcCompiler().compile(request);
    FAIL("expected ToolchainError");
  } catch (const ToolchainError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Contains("kda_prefill_broken_c16.cu for sm_90a"));
    CHECK_THAT(message, Contains("NVRTC_ERROR_COMPILATION"));
    CHECK_THAT(message, Contains("expected an expression")); // the first error line is in the message
    CHECK_THAT(e.log(), Contains("kda_prefill_broken_c16.cu(2): error: expected an expression"));
    CHECK(e.options() == runtime::default_compile_options(request.target));
    REQUIRE_FALSE(e.source_path().empty());
    const std::filesystem::path written(e.source_path());
    CHECK(written.parent_path() == dir);
    CHECK(written.filename().string().starts_with("kda_prefill_broken_c16-"));
    CHECK(written.extension() == ".cu");
    CHECK(test::read_text(e.source_path()) == request.source);
    const std::string report = test::read_text(e.source_path() + ".log");
    CHECK_THAT(report, Contains("-arch=sm_90a -std=c++17 --ptxas-options=-v -default-device"));
    CHECK_THAT(report, Contains("expected an expression"));
    CHECK_THAT(message, Contains(e.source_path()));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("nvrtc compiler: a missing entry point is an error naming it", "[runtime][nvrtc]") {
  CompileRequest request = test_kernels_request(target_named("sm_90"));
  request.entry_points = {"kda_test_mma", "kda_not_there"};
  request.failure_dir = test::fresh_scratch_dir("missing_entry");
  try {
    runtime::NvrtcCompiler().compile(request);
    FAIL("expected ToolchainError");
  } catch (const ToolchainError& e) {
    CHECK_THAT(e.what(), Contains("entry point kda_not_there not in the cubin"));
    CHECK_THAT(e.what(), Contains("its functions: kda_test_mma, kda_test_smem_reverse"));
    CHECK_FALSE(e.source_path().empty());
  }
  std::filesystem::remove_all(request.failure_dir);
}

TEST_CASE("nvrtc compiler: concurrent compiles agree with a serial one", "[runtime][nvrtc]") {
  const runtime::NvrtcCompiler compiler;
  const std::vector<std::string> names = {"sm_90a", "sm_100a", "sm_90a", "sm_120a"};
  std::vector<std::future<CompiledModule>> running;
  for (const std::string& name : names) {
    running.push_back(std::async(std::launch::async, [&compiler, name] {
      return compiler.compile(test_kernels_request(*find_target(name)));
    }));
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO("target " << names[i]);
    const CompiledModule parallel = running[i].get();
    const CompiledModule serial = compiler.compile(test_kernels_request(target_named(names[i])));
    CHECK(parallel.cubin == serial.cubin);
    CHECK(parallel.resources == serial.resources);
  }
}

TEST_CASE("nvrtc compiler: registers, stack frame and static SMEM come from the cubin", "[runtime][nvrtc]") {
  const runtime::NvrtcCompiler compiler;
  CompileRequest framed;
  framed.source = test::k_static_smem_frame_kernel;
  framed.label = "kda_runtime_test_frame.cu";
  framed.entry_points = {"kda_test_static_smem_frame"};
  for (const Target& target : all_targets()) {
    INFO("target " << target.name);
    framed.target = target;
    for (const CompileRequest& request : {test_kernels_request(target), framed}) {
      const CompiledModule module = compiler.compile(request);
      const std::map<std::string, runtime::CubinResources> recorded = runtime::cubin_resources(module.cubin);
      const std::map<std::string, runtime::ResourceUsage> logged = runtime::parse_ptxas_resource_log(module.log);
      for (const std::string& entry : request.entry_points) {
        INFO(entry);
        REQUIRE(recorded.contains(entry));
        REQUIRE(logged.contains(entry));
        // the cubin and ptxas agree, and the module reports the cubin's figures
        CHECK(recorded.at(entry).registers == logged.at(entry).registers);
        CHECK(recorded.at(entry).stack_frame_bytes == logged.at(entry).stack_frame_bytes);
        CHECK(recorded.at(entry).static_smem_bytes == logged.at(entry).static_smem_bytes);
        CHECK(module.resources.at(entry).registers == recorded.at(entry).registers);
        CHECK(module.resources.at(entry).static_smem_bytes == recorded.at(entry).static_smem_bytes);
      }
    }
    const CompiledModule module = compiler.compile(framed);
    const runtime::ResourceUsage& r = module.resources.at("kda_test_static_smem_frame");
    CHECK(r.static_smem_bytes == 1200);
    CHECK(r.stack_frame_bytes >= 256);
  }
  CHECK(runtime::cubin_resources({}).empty());
  CHECK(runtime::cubin_resources({0x7f, 'E', 'L', 'F'}).empty());
}

TEST_CASE("entry resources: the cubin's figures, the log's spills, refused when unknowable", "[runtime][nvrtc]") {
  runtime::CubinResources cubin;
  cubin.registers = 168;
  cubin.static_smem_bytes = 1024;
  runtime::ResourceUsage log;
  log.static_smem_bytes = 1024;
  log.registers = 1; // the cubin wins
  log.spill_store_bytes = 8;
  log.barriers = 2;
  log.wgmma_serialized = true;
  const auto both = runtime::entry_resources("k", &cubin, &log);
  REQUIRE(std::holds_alternative<runtime::ResourceUsage>(both));
  const runtime::ResourceUsage& u = std::get<runtime::ResourceUsage>(both);
  CHECK(u.registers == 168);
  CHECK(u.static_smem_bytes == 1024);
  CHECK(u.spill_store_bytes == 8);
  CHECK(u.barriers == 2);
  CHECK(u.wgmma_serialized);
  // no stack frame: nothing can have spilled, the log may be silent
  const auto frameless = runtime::entry_resources("k", &cubin, nullptr);
  REQUIRE(std::holds_alternative<runtime::ResourceUsage>(frameless));
  CHECK(std::get<runtime::ResourceUsage>(frameless).spill_store_bytes == 0);
  CHECK(std::get<runtime::ResourceUsage>(frameless).registers == 168);
  // a stack frame without the log's lines: spills unknown
  cubin.stack_frame_bytes = 256;
  const auto framed = runtime::entry_resources("k", &cubin, nullptr);
  REQUIRE(std::holds_alternative<std::string>(framed));
  CHECK_THAT(std::get<std::string>(framed), Contains("256-byte stack frame but the ptxas log does not list it"));
  // the cubin and ptxas disagree on static SMEM, or the cubin's section is unreadable
  cubin.stack_frame_bytes = 0;
  log.static_smem_bytes = 2048;
  const auto disagree = runtime::entry_resources("k", &cubin, &log);
  REQUIRE(std::holds_alternative<std::string>(disagree));
  CHECK_THAT(std::get<std::string>(disagree), Contains("the cubin records 1024 bytes of static SMEM, ptxas 2048"));
  cubin.static_smem_bytes = -1;
  const auto short_section = runtime::entry_resources("k", &cubin, nullptr);
  REQUIRE(std::holds_alternative<std::string>(short_section));
  CHECK_THAT(std::get<std::string>(short_section), Contains("smaller than the 1024-byte system reserve"));
  // nothing in the cubin
  const auto none = runtime::entry_resources("k", nullptr, &log);
  REQUIRE(std::holds_alternative<std::string>(none));
  CHECK_THAT(std::get<std::string>(none), Contains("the cubin records no resources"));
}
