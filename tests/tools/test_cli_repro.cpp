// kdajit repro: the files it writes reproduce kdajit's compile exactly — the
// generated source and the NVRTC options compile (here through the same
// libnvrtc) to the cubin the kernel cache holds for that schedule, target and
// shape key.
#include "cache/cache_test_support.hpp"
#include "cache/entry_io.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/target.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/tier0_codegen.hpp"
#include "test_support.hpp"
#include "tools/exit_codes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>

using namespace kda;
using Catch::Contains;

TEST_CASE("repro writes the source, the exact NVRTC options and a replay script", "[tools][cli][repro]") {
  cache::test::ScratchDir dir;
  const test::CliRun run = test::run_kdajit(
      {"repro", "--schedule", "portable_c16", "--target", "sm_90", "--state", "fp32", "--layout", "packed", "--out", dir.path(),
       "--json"});
  REQUIRE(run.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  REQUIRE(j["files"].size() == 3);
  const std::string stem = "kda_prefill_portable_c16.sm_90.d128.in_bf16.state_fp32.packed";
  const std::string source = test::read_text(dir / (stem + ".cu"));
  const std::string options_text = test::read_text(dir / (stem + ".nvrtc-options"));
  const std::string script = test::read_text(dir / (stem + ".replay.py"));
  CHECK_THAT(script, Contains("nvrtcCompileProgram"));
  CHECK_THAT(script, Contains(stem + ".nvrtc-options"));

  const Target target = *find_target("sm_90");
  std::vector<std::string> options;
  std::istringstream lines(options_text);
  for (std::string line; std::getline(lines, line);) {
    options.push_back(line);
  }
  CHECK(options == runtime::default_compile_options(target));

  // the kernel cache's cubin for the same key, and a compile of the repro files
  ShapeKey shape; // the key test_compile_shipped compiles too: one compile for both
  shape.layout = LayoutKind::packed;
  shape.state_dtype = StatePrecision::fp32;
  const auto prepared = KernelRegistry::instance().prepare(*find_shipped_schedule("portable_c16"), target, shape);
  runtime::CompileRequest request;
  request.source = source;
  request.label = stem + ".cu";
  request.target = target;
  const runtime::CompiledModule replayed = runtime::NvrtcCompiler().compile(request);
  CHECK(replayed.options == options);
  CHECK(replayed.cubin == prepared->entry->cubin);

  CHECK(test::run_kdajit({"repro", "--schedule", "portable_c16"}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"repro", "--schedule", test::source_path("tests/schedules/sm120_m64_no_generator.json"),
                          "--target", "sm_120a", "--out", dir.path()})
            .exit_code == tools::k_exit_invalid_schedule);
}

// The llvm backend: the IR, the PTX LLVM writes from it (written again from
// the saved IR, the same text), the nvJitLink options, and a replay script
// whose cubin is the one the kernel cache holds for the same key.
TEST_CASE("repro of a tier-0 kernel writes its IR, PTX, nvJitLink options and a replay script",
          "[tools][cli][repro][ir]") {
  cache::test::ScratchDir dir;
  const test::CliRun run = test::run_kdajit({"repro", "--schedule", "token_llvm_smem", "--target", "sm_90a", "--out",
                                             dir.path(), "--json"});
  REQUIRE(run.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  REQUIRE(j["files"].size() == 4);
  const std::string stem = "kda_prefill_token_llvm_smem.sm_90a.d128.in_bf16.state_bf16.fixed";
  const std::string ir = test::read_text(dir / (stem + ".ll"));
  const std::string ptx = test::read_text(dir / (stem + ".ptx"));
  CHECK(test::read_text(dir / (stem + ".nvjitlink-options")) == "-arch=sm_90a\n-Xptxas=-v\n");
  CHECK_THAT(test::read_text(dir / (stem + ".replay.py")), Contains("nvJitLinkComplete") && Contains("llc-19"));
  const Target target = *find_target("sm_90a");
  CHECK(runtime::tier0_ptx_from_ir(ir, target, stem + ".ll") == ptx);

  const auto prepared = KernelRegistry::instance().prepare(*find_shipped_schedule("token_llvm_smem"), target, ShapeKey{});
  if (!prepared->entry->dir.empty()) { // the cache keeps the IR as the entry's source
    CHECK(test::read_text(std::filesystem::path(prepared->entry->dir) / cache::k_source_file) == ir);
  }
  const std::string replay = "python3 " + (dir / (stem + ".replay.py")) + " " + CUDA_NVJITLINK_LIBRARY +
                             " > /dev/null";
  REQUIRE(std::system(replay.c_str()) == 0);
  const std::string cubin = test::read_text(dir / (stem + ".cubin"));
  CHECK(cubin.size() > 1000);
  CHECK(std::vector<std::uint8_t>(cubin.begin(), cubin.end()) == prepared->entry->cubin);
}
