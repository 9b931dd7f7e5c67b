#include "compiler/emit/emit_cuda.hpp"
#include "compiler/errors.hpp"
#include "compiler/emit/template_library.hpp"
#include "compiler/lower.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <regex>

using namespace kda;
using Catch::Contains;

namespace {

CudaSource emit_shipped(const std::string& name, const std::string& target, LayoutKind layout,
                        StatePrecision state = StatePrecision::bf16) {
  return emit_cuda(test::lower_shipped(name, target, layout, state));
}

} // namespace

TEST_CASE("every fragment of templates/ is embedded", "[compiler][emit]") {
  std::size_t on_disk = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test::source_path("templates"))) {
    if (entry.path().extension() == ".cuh") {
      ++on_disk;
      const std::string name =
          std::filesystem::relative(entry.path(), test::source_path("templates")).replace_extension("").string();
      CHECK(template_text(name) == test::read_text(entry.path().string()));
    }
  }
  CHECK(embedded_templates().size() == on_disk);
  CHECK_THROWS_AS(template_text("nope/missing"), InternalError);
}

TEST_CASE("emitted source has the plan header, the fragments and the entry points", "[compiler][emit]") {
  const CudaSource src = emit_shipped("portable_c16", "sm_90", LayoutKind::packed);
  CHECK(src.file_name == "kda_prefill_portable_c16.sm_90.d128.in_bf16.state_bf16.packed.cu");
  CHECK(src.entry_points == std::vector<std::string>{"kda_prefill_portable_c16_chunk_offsets",
                                                     "kda_prefill_portable_c16_prepare",
                                                     "kda_prefill_portable_c16_recurrence"});
  CHECK_THAT(src.text, Contains("constexpr int CHUNK_SIZE = 16;"));
  CHECK_THAT(src.text, Contains("constexpr int LAYOUT_PACKED = 1;"));
  CHECK_THAT(src.text, Contains("static_assert(sizeof(KdaParams) =="));
  CHECK_THAT(src.text, Contains("extern \"C\" __global__ void __launch_bounds__(128) kda_prefill_portable_c16_recurrence("));
  CHECK_THAT(src.text, Contains("// ---- fragment warp_mma/recurrence ----"));
  CHECK(src.text.find("#include") == std::string::npos); // compiles under NVRTC with no include path
  // The prologue precedes the plan header, which precedes the fragments that use it.
  CHECK(src.text.find("fragment common/prologue") < src.text.find("namespace kda_plan"));
  CHECK(src.text.find("namespace kda_plan") < src.text.find("fragment common/sequences"));
}

TEST_CASE("emission is deterministic across processes", "[compiler][emit]") {
  const std::string binary = test::kdajit_binary();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kdajit-emit-determinism";
  std::filesystem::create_directories(dir);
  const std::string a = (dir / "a.cu").string();
  const std::string b = (dir / "b.cu").string();
  const std::string args = " emit --schedule portable_c16 --target sm_120a --state fp32 --layout packed > ";
  REQUIRE(std::system((binary + args + a).c_str()) == 0);
  REQUIRE(std::system((binary + args + b).c_str()) == 0);
  const std::string first = test::read_text(a);
  CHECK(first.size() > 1000);
  CHECK(first == test::read_text(b));
  CHECK(first == emit_shipped("portable_c16", "sm_120a", LayoutKind::packed, StatePrecision::fp32).text);
  std::filesystem::remove_all(dir);
}

// Issue 5, item 1: every buffer of the plan is used by an emitted fragment,
// and the emitted SMEM layout structs pin the planner's offsets and sizes.
TEST_CASE("every SMEM buffer of a generated plan is addressed by the fragments the module emits",
          "[compiler][emit][smem]") {
  int plans = 0;
  for (const Schedule& s : shipped_schedules()) {
    try {
      find_family_recipe(s);
    } catch (const ScheduleError&) {
      continue; // no generator yet
    }
    if (s.backend == Backend::llvm) {
      continue; // no fragments: the token kernel addresses its ring by the plan's offsets (tests/ir)
    }
    for (const std::string& target : s.targets) {
      const KernelPlan plan = lower(validate(s, test::target_named(target)), ShapeKey{});
      ++plans;
      std::string fragments;
      for (const std::string& f : plan.fragments) {
        fragments += std::string(template_text(f));
      }
      for (const EntryPlan& e : plan.entries) {
        for (const SmemSymbol& sym : e.smem) {
          INFO(s.name << " on " << target << ", kernel " << e.kernel << ", buffer " << sym.buffer);
          // fragments address buffers as <namespace alias>::<NAME>_OFFSET or
          // as members of the emitted layout structs (slot.beta, r.at->kd, slot.lmat_at.lmat)
          const bool by_offset = fragments.find("::" + sym.name + "_OFFSET") != std::string::npos;
          const bool by_member = std::regex_search(fragments, std::regex("(\\.|->)" + sym.buffer + "(_at)?\\b"));
          CHECK((by_offset || by_member));
        }
      }
      const std::string text = emit_cuda(plan).text;
      for (const EntryPlan& e : plan.entries) {
        for (const SmemSymbol& sym : e.smem) {
          INFO(s.name << " on " << target << ", buffer " << sym.buffer);
          // a buffer only_with a feature the plan lacks has no place in the layout
          CHECK((text.find("== " + sym.name + "_OFFSET, \"" + sym.buffer + " at its planned offset\");") !=
                 std::string::npos) == sym.present);
        }
        if (!e.smem.empty()) {
          CHECK(text.find("static_assert(sizeof(SmemLayout) <= SMEM_BYTES") != std::string::npos);
        }
      }
    }
  }
  CHECK(plans >= 6);
}

TEST_CASE("the SMEM layout structs: aliases share a union, padding keeps planned offsets", "[compiler][emit][smem]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c32", "sm_90a", LayoutKind::fixed);
  const std::string text = emit_cuda(plan).text;
  // q_raw and the buffers that reuse its bytes (ki, then L at offset 0 and
  // Mqk after it, placed by a padded member) in one union
  CHECK_THAT(text, Contains("struct StageSlotUpTo_0_mqk { ::kda::u8 pad[4608]; ::kda::u16 mqk[1280]; };"));
  CHECK_THAT(text, Contains("struct StageSlotUpTo_0 {\n      union {\n        ::kda::u16 q_raw[4096];\n        "
                            "::kda::u16 ki[4096];\n        float lmat[1152];\n        StageSlotUpTo_0_mqk mqk_at;\n      };"));
  CHECK_THAT(text, Contains("static_assert(sizeof(StageSlotUpTo_0) == K_RAW_OFFSET, \"k_raw at its planned offset\");"));
  // the recurrence's ring of 4 record slots, then the shared buffers
  CHECK_THAT(text, Contains("struct Ring {\n      StageSlot slot[STAGES];"));
  CHECK_THAT(text, Contains("static_assert(sizeof(Ring) == OUT_OFFSET, \"out at its planned offset\");"));
  CHECK_THAT(text, Contains("::kda::u64 full[4];"));
}
