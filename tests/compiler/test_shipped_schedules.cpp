#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace kda;
using Catch::Contains;
using nlohmann::json;

namespace {

const SmemLayout& only_kernel_smem(const ValidatedSchedule& v) {
  REQUIRE(v.kernels().size() == 1);
  return v.kernels()[0].smem;
}

ValidatedSchedule validated(const std::string& name, const std::string& target) {
  return validate(test::shipped_schedule(name), test::target_named(target));
}

} // namespace

TEST_CASE("every shipped schedule validates on every target it lists", "[compiler][schedules]") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_path("schedules"))) {
    if (entry.path().extension() != ".json") {
      continue;
    }
    ++files;
    const Schedule s = load_schedule_file(entry.path().string());
    CHECK(entry.path().stem() == s.name);
    for (const std::string& target : s.targets) {
      INFO(s.name << " on " << target);
      CHECK_NOTHROW(validate(s, test::target_named(target)));
    }
  }
  CHECK(files >= 5);
}

TEST_CASE("M128 totals are computed from the buffers it needs", "[compiler][schedules][budget]") {
  const ValidatedSchedule v = validated("sm100_m128_c32", "sm_100a");
  const SmemLayout& s = only_kernel_smem(v);
  // Sizes come from shape x dtype: 3 tiles bf16[32,128] (each hosting a chain of
  // aliases), the split operands' lo tiles qd_lo and ki_lo (bf16[32,128] each,
  // later hosting [Kr | Mqk^T], L / T and the inverse's fp32 scratch), and 896 B
  // of per-column and per-row vectors.
  CHECK(s.stage_used_bytes == 5 * 8192 + 512 + 256 + 128);
  CHECK(s.stage_used_bytes == 41'856);
  CHECK(s.stage_bytes == 41'984); // rounded to 1,024 B: the seed's "one preparation stage"
  CHECK(s.stages == 5);
  CHECK(s.ring_bytes == 209'920); // the seed's five-stage payload
  CHECK(s.find("out")->bytes == 16'384); // two output buffers, as in the seed
  CHECK(s.shared_bytes == 16'692);       // outputs + 31 mbarriers + TMEM address slot
  CHECK(s.shared_bytes <= 16'384 + 1'024); // the seed's control block
  CHECK(s.ring_bytes + s.shared_bytes <= 227'328); // the seed's total
  CHECK(s.alignment_slack == 1'008);
  CHECK(s.total_bytes == 227'620);
  CHECK(v.tmem().used_columns == 256);
  CHECK(v.tmem().allocated_columns == 256);
  for (const PlacedBuffer& b : s.buffers) {
    // the frozen layout: every ring-slot offset pinned in the JSON and checked
    CHECK((b.pinned || b.region == Region::shared));
  }
}

TEST_CASE("removing any one alias from the M128 plan is an overlap error", "[compiler][schedules][alias]") {
  const json original = test::shipped_schedule_json("sm100_m128_c32");
  const json& buffers = original["smem"]["buffers"];
  int aliases = 0;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].contains("alias")) {
      continue;
    }
    ++aliases;
    json doc = original;
    doc["smem"]["buffers"][i].erase("alias");
    const std::string name = buffers[i]["name"];
    INFO("without the alias of '" << name << "'");
    const std::string problems = test::validation_problems(doc, "sm_100a");
    CHECK_THAT(problems, Contains("/smem/buffers/" + std::to_string(i) + ": '" + name + "' overlaps"));
  }
  CHECK(aliases == 13);
}

TEST_CASE("M64 and N16 variants fit with their documented resources", "[compiler][schedules][budget]") {
  const ValidatedSchedule m64 = validated("sm100_m64_c32", "sm_100f");
  CHECK(m64.schedule().m_tile == 64);
  CHECK(only_kernel_smem(m64).stage_bytes == 41'984);               // M128's ring slot: both CTAs prepare every chunk
  CHECK(only_kernel_smem(m64).find("out")->bytes == 2 * 32 * 64 * 2); // half the value columns
  CHECK(only_kernel_smem(m64).total_bytes == 219'428);

  const ValidatedSchedule n16 = validated("sm100_n16_c16", "sm_103a");
  CHECK(n16.tmem().used_columns == 224); // state 128, output 16, work 16, snapshot 64 (the seed's N16: 240)
  CHECK(n16.tmem().allocated_columns == 256);
  CHECK(only_kernel_smem(n16).stages == 10);
  CHECK(only_kernel_smem(n16).stage_bytes == 21'504);
  CHECK(only_kernel_smem(n16).total_bytes == 224'676);
}

TEST_CASE("ring barrier arrays have one mbarrier per slot", "[compiler][schedules]") {
  for (const char* name : {"sm100_m128_c32", "sm100_m64_c32", "sm100_n16_c16", "sm120_c32", "portable_c16"}) {
    const Schedule s = test::shipped_schedule(name);
    for (const KernelDecl& k : s.kernels) {
      for (const BufferDecl& b : k.smem.buffers) {
        const bool per_slot = b.name.rfind("slot_", 0) == 0 || b.name == "tile_loaded" || b.name == "v_loaded";
        if (b.dtype == DType::u64 && per_slot) {
          INFO(name << " " << b.name);
          CHECK(b.shape == std::vector<std::int64_t>{k.pipeline.stages});
        }
      }
    }
  }
}

TEST_CASE("the sm_120a designs fit 101,376 B per block", "[compiler][schedules][budget]") {
  const ValidatedSchedule sm120 = validated("sm120_c32", "sm_120a");
  CHECK(only_kernel_smem(sm120).total_bytes == 93'232);
  CHECK(only_kernel_smem(sm120).total_bytes <= 101'376);
  for (const char* name : {"portable_c16", "sm120_decomposed_c16"}) {
    const ValidatedSchedule two = validated(name, "sm_120a");
    REQUIRE(two.kernels().size() == 2);
    for (const ValidatedKernel& k : two.kernels()) {
      INFO(name << " " << k.decl.name);
      CHECK(k.smem.total_bytes <= 101'376);
    }
  }
  // One more ring slot no longer fits on sm_120a.
  json doc = test::shipped_schedule_json("sm120_c32");
  doc["pipeline"]["stages"] = 3;
  for (auto& b : doc["smem"]["buffers"]) {
    if (b["dtype"] == "u64") {
      b["shape"] = {3};
    }
  }
  CHECK_THAT(test::validation_problems(doc, "sm_120a"),
             Contains("/smem: total SMEM 135,272 B exceeds sm_120a's limit of 101,376 B by 33,896 B"));
}
