// Caller features as plan data (issue 21, item 0): the family's generator
// implements them, the schedule's eligibility offers them, lower() keeps what
// both grant; checkpoints are compiled in only through the shape key.
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace kda;
using Catch::Contains;

namespace {

ShapeKey with_checkpoints(LayoutKind layout) {
  ShapeKey k;
  k.layout = layout;
  k.checkpoints = true;
  return k;
}

std::string lowering_error(const Schedule& s, const std::string& target, const ShapeKey& shape) {
  try {
    lower(validate(s, test::target_named(target)), shape);
  } catch (const ScheduleError& e) {
    return e.what();
  }
  return "lowered";
}

} // namespace

TEST_CASE("plan features: every family that has a generator implements pools, seq_order and checkpoints",
          "[compiler][lower][contract]") {
  for (const FamilyRecipe& r : all_family_recipes()) {
    INFO(r.name);
    CHECK(r.features.state_pool);
    CHECK(r.features.seq_order);
    CHECK(r.features.checkpoints);
  }
  for (const char* name : {"portable_c16", "sm90_wgmma_c16", "sm90_wgmma_c32", "sm100_m128_c32"}) {
    const KernelPlan plan = test::lower_shipped(name, std::string(name).starts_with("sm100") ? "sm_100a"
                                                       : std::string(name).starts_with("sm90") ? "sm_90a"
                                                                                                : "sm_90",
                                                LayoutKind::packed);
    INFO(name);
    CHECK(plan.features.state_pool);
    CHECK(plan.features.seq_order);
    CHECK_FALSE(plan.features.checkpoints); // not compiled in without the shape key
    for (const char* field : {"state_indices", "state_slot_stride", "seq_order", "checkpoints", "checkpoint_starts",
                              "checkpoint_chunks"}) {
      CHECK(plan.abi.find(field) != nullptr);
    }
  }
}

TEST_CASE("plan features: checkpoints are compiled in only through the shape key", "[compiler][lower][emit][contract]") {
  const Schedule& s = test::shipped_schedule("sm90_wgmma_c32");
  const KernelPlan plain = lower(validate(s, test::target_named("sm_90a")), ShapeKey{});
  const KernelPlan checkpointed = lower(validate(s, test::target_named("sm_90a")), with_checkpoints(LayoutKind::fixed));
  CHECK(checkpointed.features.checkpoints);
  CHECK(checkpointed.shape.canonical() == "d128.in_bf16.state_bf16.fixed.checkpoints");
  const std::string a = emit_cuda(plain).text;
  const std::string b = emit_cuda(checkpointed).text;
  CHECK_THAT(a, Contains("constexpr int CHECKPOINTS = 0;"));
  CHECK_THAT(b, Contains("constexpr int CHECKPOINTS = 1;"));
}

TEST_CASE("plan features: a schedule cannot offer what it does not, nor what its generator lacks",
          "[compiler][lower][contract]") {
  nlohmann::json doc = test::shipped_schedule_json("sm90_wgmma_c16");
  doc["name"] = "no_checkpoints";
  doc["eligibility"]["checkpoints"] = false;
  const Schedule s = parse_schedule(doc, "no_checkpoints.json");
  CHECK(lowering_error(s, "sm_90a", ShapeKey{}) == "lowered");
  CHECK_THAT(lowering_error(s, "sm_90a", with_checkpoints(LayoutKind::packed)),
             Contains("/eligibility/checkpoints: the shape key d128.in_bf16.state_bf16.packed.checkpoints compiles "
                      "native checkpoints in, which schedule no_checkpoints does not offer"));
}

TEST_CASE("plan features: a schedule does not declare the generator's sequence-table kernel", "[compiler][validate]") {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["kernels"][0]["role"] = "sequence_table";
  const Schedule s = parse_schedule(doc, "declares_table.json");
  try {
    validate(s, test::target_named("sm_90"));
    FAIL("validated");
  } catch (const ScheduleError& e) {
    CHECK_THAT(e.what(), Contains("/kernels/0/role: 'sequence_table' is the generator's own kernel"));
  }
}

TEST_CASE("plan features: the wgmma checkpoint tile takes SMEM only in plans with checkpoints",
          "[compiler][lower][emit][smem][contract]") {
  const Schedule& s = test::shipped_schedule("sm90_wgmma_c16");
  const KernelPlan plain = lower(validate(s, test::target_named("sm_90a")), ShapeKey{});
  const KernelPlan checkpointed = lower(validate(s, test::target_named("sm_90a")), with_checkpoints(LayoutKind::fixed));
  auto recurrence = [](const KernelPlan& p) -> const EntryPlan& {
    for (const EntryPlan& e : p.entries) {
      if (e.role == KernelRole::recurrence) {
        return e;
      }
    }
    FAIL("no recurrence entry");
    return p.entries.front();
  };
  auto symbol = [](const EntryPlan& e, const std::string& name) -> const SmemSymbol& {
    for (const SmemSymbol& sym : e.smem) {
      if (sym.buffer == name) {
        return sym;
      }
    }
    FAIL("no SMEM symbol " << name);
    return e.smem.front();
  };
  const EntryPlan& a = recurrence(plain);
  const EntryPlan& b = recurrence(checkpointed);
  CHECK_FALSE(symbol(a, "checkpoint").present);
  CHECK(symbol(a, "checkpoint").bytes == 0);
  CHECK(symbol(b, "checkpoint").present);
  CHECK(symbol(b, "checkpoint").bytes == 2 * 128 * 64 * 2); // two TMA boxes [128][64]
  CHECK(symbol(b, "checkpoint").offset % 1024 == 0);       // the 128-byte swizzle's atom
  CHECK(b.smem_bytes - a.smem_bytes >= 2 * 128 * 64 * 2 + 16);
  CHECK(b.launch.dynamic_smem == b.smem_bytes); // not exclusive_sm: the layout is what it requests
  const std::string text_a = emit_cuda(plain).text;
  const std::string text_b = emit_cuda(checkpointed).text;
  CHECK_THAT(text_a, Contains("constexpr int CHECKPOINT_BYTES = 0;"));
  CHECK_THAT(text_b, Contains("constexpr int CHECKPOINT_BYTES = 32768;"));
  CHECK_THAT(text_b, Contains("checkpoint[16384];"));
  CHECK_FALSE(text_a.find("checkpoint[") != std::string::npos); // no place in the plain plan's layout
}

TEST_CASE("plan features: wgmma plans with checkpoints store the rows through a TMA tensor map of M-tile boxes",
          "[compiler][lower][contract]") {
  const auto field = [](const KernelPlan& p, const std::string& name) {
    return std::any_of(p.abi.fields.begin(), p.abi.fields.end(), [&](const ArgField& f) { return f.name == name; });
  };
  for (const auto& [name, m_tile] : {std::pair<std::string, int>{"sm90_wgmma_c16", 128}, {"sm90_wgmma_c32", 128},
                                     {"sm90_wgmma_c16_m64", 64}}) {
    INFO(name);
    const ValidatedSchedule v = validate(test::shipped_schedule(name), test::target_named("sm_90a"));
    const KernelPlan plain = lower(v, ShapeKey{});
    const KernelPlan checkpointed = lower(v, with_checkpoints(LayoutKind::packed));
    CHECK_FALSE(plain.checkpoint_tensor_map);
    CHECK_FALSE(field(plain, "tma_checkpoints")); // the plain plan's ABI is as before
    REQUIRE(checkpointed.checkpoint_tensor_map);
    CHECK(checkpointed.checkpoint_tensor_map->box_cols == 64); // 128 B of bf16: the 128-byte swizzle span
    CHECK(checkpointed.checkpoint_tensor_map->box_rows == m_tile);
    CHECK(field(checkpointed, "tma_checkpoints"));
    CHECK(checkpointed.abi.alignment == 64); // the map is 64-byte aligned in the parameter struct
  }
  // A family that stores the rows with plain stores takes no map.
  const ValidatedSchedule portable = validate(test::shipped_schedule("portable_c16"), test::target_named("sm_90"));
  CHECK_FALSE(lower(portable, with_checkpoints(LayoutKind::fixed)).checkpoint_tensor_map);
}

TEST_CASE("plan features: persistent wgmma plans with a bf16 state move its tiles through a TMA tensor map",
          "[compiler][lower][contract]") {
  const auto field = [](const KernelPlan& p, const std::string& name) {
    return std::any_of(p.abi.fields.begin(), p.abi.fields.end(), [&](const ArgField& f) { return f.name == name; });
  };
  for (const char* name :
       {"sm90_wgmma_c16_persistent", "sm90_wgmma_c32_persistent", "sm90_wgmma_c32_split", "sm90_wgmma_c16_fused"}) {
    INFO(name);
    const ValidatedSchedule v = validate(test::shipped_schedule(name), test::target_named("sm_90a"));
    ShapeKey bf16_state;
    bf16_state.layout = LayoutKind::packed;
    ShapeKey fp32_state = bf16_state;
    fp32_state.state_dtype = StatePrecision::fp32;
    const KernelPlan with_bf16 = lower(v, bf16_state);
    REQUIRE(with_bf16.state_tensor_map);
    CHECK(with_bf16.state_tensor_map->box_cols == 64); // 128 B of bf16: the 128-byte swizzle span
    CHECK(with_bf16.state_tensor_map->box_rows == 128);
    CHECK(field(with_bf16, "tma_state"));
    CHECK(with_bf16.abi.alignment == 64);
    // an fp32 state never goes through SMEM: no map, the ABI as before
    const KernelPlan with_fp32 = lower(v, fp32_state);
    CHECK_FALSE(with_fp32.state_tensor_map);
    CHECK_FALSE(field(with_fp32, "tma_state"));
  }
  // the direct grid keeps the state in registers from global memory
  const ValidatedSchedule direct = validate(test::shipped_schedule("sm90_wgmma_c16"), test::target_named("sm_90a"));
  CHECK_FALSE(lower(direct, ShapeKey{}).state_tensor_map);
}
