// The LLVM tier's code generator (libkdajit.so's tier-0 entry points): LLVM
// IR text parses and passes llvm::verifyModule, LLVM 19's NVPTX backend
// writes PTX for every kdajit target (retargeted past sm_90a), and ptxas
// (nvJitLink) assembles each into a cubin; text that does not parse or a
// malformed module is an InternalError naming it.
#include "compiler/errors.hpp"
#include "compiler/ir/nvptx_processor.hpp"
#include "compiler/ptx/ptx_retarget.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "runtime/ptx_linker.hpp"
#include "runtime/tier0_codegen.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using Catch::Contains;

namespace {

// kda_add_one(float* p): p[threadIdx.x] += 1, marked a kernel the way NVVM
// IR does (!nvvm.annotations).
constexpr const char* k_add_one = R"(
define void @kda_add_one(ptr addrspace(1) %p) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tid to i64
  %at = getelementptr inbounds float, ptr addrspace(1) %p, i64 %i
  %x = load float, ptr addrspace(1) %at
  %y = fadd float %x, 1.0
  store float %y, ptr addrspace(1) %at
  ret void
}
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
!nvvm.annotations = !{!0}
!0 = !{ptr @kda_add_one, !"kernel", i32 1}
)";

} // namespace

TEST_CASE("nvptx codegen: LLVM's processor for each target, retargeted past sm_90a", "[compiler][ir]") {
  CHECK(runtime::tier0_llvm_version().rfind("19.", 0) == 0);
  const ir::NvptxProcessor sm80 = ir::nvptx_processor(test::target_named("sm_80"));
  CHECK(sm80.cpu == "sm_80");
  CHECK(sm80.ptx == PtxVersion{7, 0});
  CHECK_FALSE(sm80.retarget);
  const ir::NvptxProcessor sm90a = ir::nvptx_processor(test::target_named("sm_90a"));
  CHECK(sm90a.cpu == "sm_90a");
  CHECK(sm90a.ptx == PtxVersion{8, 0});
  CHECK_FALSE(sm90a.retarget);
  CHECK(ir::nvptx_processor(test::target_named("sm_90a_proxy")).cpu == "sm_90a"); // the proxies build for sm_90a
  for (const char* name : {"sm_100a", "sm_100f", "sm_103a", "sm_120a", "sm_120"}) {
    INFO(name);
    const ir::NvptxProcessor p = ir::nvptx_processor(test::target_named(name));
    CHECK(p.cpu == "sm_90");
    CHECK(p.retarget);
  }
}

TEST_CASE("nvptx codegen: an IR kernel becomes PTX for every target and assembles with ptxas",
          "[compiler][ir][nvjitlink]") {
  for (const Target& t : all_targets()) {
    INFO(t.name);
    const std::string ptx = runtime::tier0_ptx_from_ir(k_add_one, t, "kda_add_one.ll");
    const PtxHeader header = read_ptx_header(ptx);
    CHECK(header.target == t.arch());
    CHECK(header.version >= t.lowest_ptx_version);
    CHECK_THAT(ptx, Contains(".entry kda_add_one") && Contains("add.rn.f32") && Contains("%tid.x"));
    const runtime::LinkedCubin linked = runtime::link_ptx(ptx, t, "kda_add_one.ll.ptx");
    CHECK(test::is_elf(linked.cubin, 1000));
    CHECK_THAT(linked.info_log, Contains("kda_add_one"));
  }
}

TEST_CASE("nvptx codegen: unparsable text or a malformed module is an InternalError with LLVM's message",
          "[compiler][ir]") {
  const Target sm90 = test::target_named("sm_90");
  try {
    (void)runtime::tier0_ptx_from_ir("define void @f( {", sm90, "kda_garbled.ll");
    FAIL("expected InternalError");
  } catch (const InternalError& e) {
    CHECK_THAT(e.what(), Contains("kda_garbled.ll") && Contains("does not parse"));
  }
  // parses, but a value is used where it does not dominate: the verifier's
  // message names it
  const char* undominated = R"(
define void @kda_broken(i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  %x = add i32 1, 2
  br label %b
b:
  %y = add i32 %x, 1
  ret void
}
)";
  try {
    (void)runtime::tier0_ptx_from_ir(undominated, sm90, "kda_broken.ll");
    FAIL("expected InternalError");
  } catch (const InternalError& e) {
    CHECK_THAT(e.what(), Contains("kda_broken") && Contains("dominate"));
  }
}
