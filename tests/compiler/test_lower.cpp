#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using Catch::Contains;

using test::lower_shipped;

TEST_CASE("lowering portable_c16 gives prepare and recurrence entries from the plan", "[compiler][lower]") {
  const KernelPlan plan = lower_shipped("portable_c16", "sm_90", LayoutKind::fixed);
  REQUIRE(plan.entries.size() == 2);
  const EntryPlan& prepare = plan.entries[0];
  const EntryPlan& recurrence = plan.entries[1];
  CHECK(prepare.entry_name == "kda_prefill_portable_c16_prepare");
  CHECK(prepare.launch.grid == GridRule::chunks_by_heads);
  CHECK(prepare.launch.threads == 128);
  CHECK(recurrence.entry_name == "kda_prefill_portable_c16_recurrence");
  CHECK(recurrence.launch.grid == GridRule::sequences_by_heads);
  CHECK(recurrence.pipeline.stages == 3);
  const ValidatedSchedule v = validate(test::shipped_schedule("portable_c16"), test::target_named("sm_90"));
  CHECK(recurrence.launch.dynamic_smem == v.kernels()[1].smem.total_bytes);
  CHECK(recurrence.stage_bytes == v.kernels()[1].smem.stage_bytes);
  // SMEM symbols are the alias plan's offsets; shared buffers follow the ring.
  for (const SmemSymbol& s : recurrence.smem) {
    const PlacedBuffer* b = v.kernels()[1].smem.find(s.buffer);
    REQUIRE(b != nullptr);
    CHECK(s.offset == (b->region == Region::stage ? b->offset : v.kernels()[1].smem.shared_offset + b->offset));
  }
  CHECK(plan.workspace.record_bytes == 3 * 4096 + 2 * 512 + 64 + 512);
  CHECK(plan.abi.find("q")->offset == 0);
  CHECK(plan.abi.size % 8 == 0);
}

TEST_CASE("packed input adds the chunk-offsets entry first", "[compiler][lower]") {
  const KernelPlan plan = lower_shipped("portable_c16", "sm_120a", LayoutKind::packed, StatePrecision::fp32);
  REQUIRE(plan.entries.size() == 3);
  CHECK(plan.entries[0].entry_name == "kda_prefill_portable_c16_chunk_offsets");
  CHECK(plan.entries[0].launch.grid == GridRule::single_block);
  CHECK(plan.shape.canonical() == "d128.in_bf16.state_fp32.packed");
}

TEST_CASE("a plan whose buffers do not match the fragments cannot be lowered", "[compiler][lower]") {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["kernels"][1]["smem"]["buffers"].push_back(
      {{"name", "spare"}, {"shape", {64}}, {"dtype", "fp32"}, {"region", "stage"}, {"lifetime", {"load", "store"}}});
  auto& prepare_buffers = doc["kernels"][0]["smem"]["buffers"];
  for (std::size_t i = 0; i < prepare_buffers.size(); ++i) {
    if (prepare_buffers[i]["name"] == "kd") {
      prepare_buffers.erase(i);
      break;
    }
  }
  const Schedule s = parse_schedule(doc, "edited.json");
  try {
    lower(validate(s, test::target_named("sm_90")), ShapeKey{});
    FAIL("lowering should fail");
  } catch (const ScheduleError& e) {
    std::string all;
    for (const Diagnostic& d : e.diagnostics()) {
      all += d.to_string() + "\n";
    }
    CHECK_THAT(all, Contains("fragment common/prepare_chunk needs a buffer 'kd' that kernel 'prepare' does not declare"));
    CHECK_THAT(all, Contains("/kernels/1/smem/buffers/9: buffer 'spare' is not used by fragment warp_mma/recurrence"));
  }
}

TEST_CASE("families without a generator are refused with the reason", "[compiler][lower]") {
  CHECK_THROWS_WITH(lower_shipped("sm100_m128_c32", "sm_100a", LayoutKind::fixed),
                    Contains("no code generator yet for a tcgen05 fused design with chunk 32"));
}
