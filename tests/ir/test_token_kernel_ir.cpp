// The token-recurrent kernel as NVVM IR (compiler/ir/token_kernel, through
// libkdajit.so's tier-0 entry points): for each layout, state dtype, output
// dtype and checkpoint setting the `token_llvm` plan's module passes
// llvm::verifyModule, reads its arguments from the plan's ABI struct and its
// ring from dynamic SMEM, LLVM's NVPTX backend writes PTX for sm_80, sm_90,
// sm_90a and (retargeted) the Blackwell and SM120 targets, and ptxas
// (nvJitLink) assembles each, with no spills but on sm_80.
#include "compiler/errors.hpp"
#include "compiler/ptx/ptx_retarget.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "runtime/tier0_build.hpp"
#include "runtime/tier0_codegen.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using Catch::Contains;

TEST_CASE("token kernel IR: every configuration verifies, lowers and assembles without spills",
          "[compiler][ir][nvjitlink]") {
  REQUIRE(runtime::tier0_available());
  const std::string schedule = GENERATE("token_llvm", "token_llvm_smem");
  for (LayoutKind layout : {LayoutKind::fixed, LayoutKind::packed}) {
    for (StatePrecision state : {StatePrecision::bf16, StatePrecision::fp32}) {
      for (bool checkpoints : {false, true}) {
        for (const char* name : {"sm_80", "sm_90", "sm_90a", "sm_100a", "sm_120a"}) {
          KernelPlan plan = test::lower_shipped(schedule, name, layout, state, checkpoints);
          REQUIRE(plan.token);
          plan.token->fp32_output = checkpoints; // both output dtypes, in half the builds
          INFO(schedule << " " << to_string(layout) << " state " << to_string(state)
                         << (checkpoints ? " checkpoints, fp32 out " : " ") << name);
          const runtime::Tier0Build b = runtime::build_tier0(plan);
          const std::string& entry = plan.token->entry_name;
          CHECK(read_ptx_header(b.ptx).target == plan.target.arch());
          CHECK_THAT(b.ptx, Contains(".entry " + entry) && Contains("bar.sync") && Contains("shfl.sync.bfly") &&
                                Contains(".maxntid 128") && Contains(".extern .shared") && Contains("ld.param"));
          CHECK((b.ptx.find("st.global.f32") != std::string::npos) == (plan.token->fp32_output || state == StatePrecision::fp32));
          CHECK(test::is_elf(b.cubin, 1000));
          CHECK(b.resources.registers <= 255);
          // the SMEM-state kernel's key loops stay rolled (ptxas is told so), so it is small
          CHECK((schedule == "token_llvm_smem") == (b.ptx.find(".pragma \"nounroll\"") != std::string::npos));
          if (plan.target.name == "sm_80") {
            // nvJitLink's ptxas (13.0) gives the sm_80 build 255 registers and a
            // few hundred bytes of spills, where the standalone ptxas 13.0
            // allocates 176 registers for the same PTX without any
            CHECK(b.resources.spill_store_bytes <= 512);
            CHECK(b.resources.spill_load_bytes <= 512);
          } else {
            CHECK(b.resources.spill_store_bytes == 0);
            CHECK(b.resources.spill_load_bytes == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("token kernel IR: the module is deterministic and names every feature it compiles in", "[compiler][ir]") {
  const KernelPlan plain = test::lower_shipped("token_llvm", "sm_90", LayoutKind::packed, StatePrecision::bf16, false);
  const KernelPlan with = test::lower_shipped("token_llvm", "sm_90", LayoutKind::packed, StatePrecision::bf16, true);
  const std::string a = runtime::tier0_ir(plain).text;
  CHECK(a == runtime::tier0_ir(plain).text);
  CHECK_THAT(a, Contains("define void @" + plain.token->entry_name) && Contains("byval([") &&
                    Contains("@kda_token_ring = external addrspace(3) global [0 x i8]") && Contains("seq_order") &&
                    Contains("state_indices") && Contains("cu_seqlens"));
  CHECK(a.find("checkpoint") == std::string::npos);
  const std::string b = runtime::tier0_ir(with).text;
  CHECK_THAT(b, Contains("checkpoint_starts") && Contains("checkpoint_chunks"));
  const KernelPlan fixed = test::lower_shipped("token_llvm", "sm_90", LayoutKind::fixed, StatePrecision::bf16, false);
  const std::string c = runtime::tier0_ir(fixed).text;
  CHECK_THAT(c, Contains("seq_len"));
  CHECK(c.find("seq_order") == std::string::npos); // fixed layouts take no order
  CHECK(c.find("cu_seqlens") == std::string::npos);
}

TEST_CASE("token kernel IR: the SMEM-state variant addresses its state image and keeps its loops rolled",
          "[compiler][ir]") {
  const KernelPlan smem = test::lower_shipped("token_llvm_smem", "sm_90a", LayoutKind::packed, StatePrecision::fp32);
  const KernelPlan registers = test::lower_shipped("token_llvm", "sm_90a", LayoutKind::packed, StatePrecision::fp32);
  REQUIRE(smem.token);
  CHECK(smem.token->residence == StateResidence::shared);
  CHECK(registers.token->residence == StateResidence::registers);
  CHECK(smem.token->dynamic_smem >= smem.token->state_offset + 128 * 128 * 4);
  CHECK(smem.token->state_offset % 16 == 0);
  const std::string ir = runtime::tier0_ir(smem).text;
  CHECK_THAT(ir, Contains("llvm.loop.unroll.disable") && Contains("decay_keys") && Contains("update_keys"));
  CHECK(ir.size() * 4 < runtime::tier0_ir(registers).text.size()); // rolled: a fraction of the unrolled module
}

TEST_CASE("token kernel IR: a CUDA-family plan has no token kernel", "[compiler][ir]") {
  const KernelPlan plan = test::lower_shipped("portable_c16", "sm_90", LayoutKind::fixed, StatePrecision::bf16, false);
  CHECK_FALSE(plan.token);
  CHECK_THROWS_AS(runtime::tier0_ir(plan), InternalError);
}
