// nvJitLink (dlopen'd, no GPU needed) assembles PTX into cubins: PTX as LLVM
// writes it (sm_90, PTX 8.5) for sm_90a directly and, retargeted, for the
// Blackwell and SM120 targets; NVRTC's PTX of the mma.sync test kernel
// likewise; a refused input is a ToolchainError with nvJitLink's log, never an
// empty cubin.
#include "compiler/errors.hpp"
#include "compiler/ptx/ptx_retarget.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "runtime/nvjitlink_library.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/ptx_linker.hpp"
#include "runtime_kernels.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using Catch::Contains;

namespace {

// An add-one kernel as LLVM 19's NVPTX backend writes it for sm_90 (+ptx85).
const char* const k_add_one = ".version 8.5\n"
                              ".target sm_90\n"
                              ".address_size 64\n"
                              "\n"
                              ".visible .entry kda_add_one(.param .u64 kda_add_one_param_0)\n"
                              "{\n"
                              "\t.reg .b64 %rd<3>;\n"
                              "\t.reg .f32 %f<3>;\n"
                              "\tld.param.u64 %rd1, [kda_add_one_param_0];\n"
                              "\tcvta.to.global.u64 %rd2, %rd1;\n"
                              "\tld.global.f32 %f1, [%rd2];\n"
                              "\tadd.f32 %f2, %f1, 0f3F800000;\n"
                              "\tst.global.f32 [%rd2], %f2;\n"
                              "\tret;\n"
                              "}\n";


} // namespace

TEST_CASE("ptx linker: LLVM-style PTX becomes a cubin for every target once retargeted", "[runtime][nvjitlink]") {
  const runtime::NvJitLinkLibrary& library = runtime::NvJitLinkLibrary::get();
  CHECK_FALSE(library.version().empty());
  for (const char* name : {"sm_80", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a", "sm_120a", "sm_120"}) {
    INFO(name);
    const Target t = test::target_named(name);
    const runtime::LinkedCubin linked = runtime::link_ptx(retarget_ptx(k_add_one, t), t, "kda_add_one.ptx");
    CHECK(test::is_elf(linked.cubin, 1000));
    CHECK(linked.options.front() == "-arch=" + t.arch());
    CHECK_THAT(linked.info_log, Contains("kda_add_one") && Contains("registers"));
  }
}

TEST_CASE("ptx linker: an un-retargeted header or bad PTX is refused with nvJitLink's log", "[runtime][nvjitlink]") {
  // LLVM's sm_90 / 8.5 header as it is: PTX 8.5 does not know sm_120a
  try {
    std::string ptx = k_add_one;
    ptx.replace(ptx.find(".target sm_90"), 13, ".target sm_120a");
    runtime::link_ptx(ptx, test::target_named("sm_120a"), "stale_header.ptx");
    FAIL("expected ToolchainError");
  } catch (const ToolchainError& e) {
    CHECK_THAT(e.what(), Contains("stale_header.ptx") && Contains("sm_120a"));
    CHECK_THAT(e.log(), Contains("8.5"));
    CHECK(e.options().front() == "-arch=sm_120a");
  }
  std::string broken = k_add_one;
  broken.replace(broken.find("add.f32"), 7, "add.q99");
  CHECK_THROWS_AS(runtime::link_ptx(broken, test::target_named("sm_90a"), "broken.ptx"), ToolchainError);
}

TEST_CASE("ptx linker: NVRTC's PTX of an mma.sync kernel, retargeted, links for SM120 and Blackwell",
          "[runtime][nvjitlink]") {
  runtime::CompileRequest request;
  request.source = test::k_runtime_test_kernels;
  request.label = "kda_runtime_test.cu";
  request.target = test::target_named("sm_90");
  request.entry_points = {"kda_test_mma", "kda_test_smem_reverse"};
  request.want_ptx = true;
  const runtime::CompiledModule module = runtime::NvrtcCompiler().compile(request);
  REQUIRE(module.ptx.has_value());
  for (const char* name : {"sm_120a", "sm_100a"}) {
    INFO(name);
    const Target t = test::target_named(name);
    const runtime::LinkedCubin linked = runtime::link_ptx(retarget_ptx(*module.ptx, t), t, "kda_runtime_test.ptx");
    CHECK(test::is_elf(linked.cubin, 1000));
    CHECK_THAT(linked.info_log, Contains("kda_test_mma"));
  }
}
