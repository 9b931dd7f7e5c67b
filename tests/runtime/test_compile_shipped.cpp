// NVRTC compiles every shipped schedule that has a generator, for each target
// it lists (one shape key per schedule and target), through the same registry
// the runtime uses: the entries land in the test cache dir that every test
// shares (KDAJIT_CACHE_DIR, set by ctest).
#include "../compiler/schedule_fixtures.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/validated_schedule.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/errors.hpp"
#include "runtime/kernel_registry.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

using namespace kda;

namespace {

// ptxas gives the fused SM120 kernel an 8-byte frame on sm_120a and sm_120
// (none on its sm_90a proxy build) although its PTX declares no local memory
// and nothing spills; anything more would be a real local array.
// The LLVM tier's token kernel on sm_80: nvJitLink's ptxas (13.0) gives it
// 255 registers and a few hundred bytes of spills, where the standalone
// ptxas 13.0 allocates 176 registers for the same PTX without any
// (docs/compiler.md, the LLVM tier).
bool token_kernel_on_sm80(const std::string& schedule, const std::string& target) {
  return schedule == "token_llvm" && target == "sm_80";
}

// sm90_wgmma_c16_fused: its prepare group (120 registers) with the rows' norms
// applied before the center's stores (common/prepare_step, NORMS_FIRST) and
// the producer warp that walks the CTA's items (72) spill 40-76 bytes (72 of
// stack; 56 with the bf16 state `kdajit bench` times): measured faster than
// the 12 bytes without the hoist (docs/bench/LESSONS.md, 2026-12-06).
bool fused_persistent_prepare(const std::string& schedule) {
  return schedule == "sm90_wgmma_c16_fused";
}

// sm90_wgmma_c32_split: the prepare kernel's walk loops over chunks, and under
// the 64-register bound (four CTAs per SM) the values the chunk derives from
// the thread index, hoisted out of the loop, spill 176 bytes (96 of stack);
// the same chunk without the loop (sm90_wgmma_c32's prepare) spills nothing
// (templates/wgmma/prepare_chunk32, prepare_walk32).
bool split_prepare_walk(const std::string& schedule) {
  return schedule == "sm90_wgmma_c32_split";
}

int allowed_stack_frame(const std::string& schedule, const std::string& target) {
  if (token_kernel_on_sm80(schedule, target)) {
    return 256;
  }
  if (fused_persistent_prepare(schedule)) {
    return 80;
  }
  if (split_prepare_walk(schedule)) {
    return 96;
  }
  return schedule == "sm120_c32" && (target == "sm_120a" || target == "sm_120") ? 8 : 0;
}

int allowed_spill_bytes(const std::string& schedule, const std::string& target) {
  if (fused_persistent_prepare(schedule)) {
    return 80;
  }
  if (split_prepare_walk(schedule)) {
    return 176;
  }
  return token_kernel_on_sm80(schedule, target) ? 512 : 0;
}

} // namespace

TEST_CASE("every generatable shipped schedule compiles with NVRTC for each of its targets", "[runtime][compile]") {
  int compiled = 0;
  for (const Schedule& s : shipped_schedules()) {
    try {
      find_family_recipe(s);
    } catch (const ScheduleError&) {
      WARN(s.name << ": no generator yet, not compiled");
      continue;
    }
    // the plain kernels (fp32 state, packed), and with native checkpoints
    // compiled in (bf16 state, fixed): both without spills
    for (const bool checkpoints : {false, true}) {
    for (const std::string& name : s.targets) {
      INFO(s.name << " on " << name << (checkpoints ? " with checkpoints" : ""));
      const Target target = *find_target(name);
      ShapeKey shape;
      shape.state_dtype = checkpoints ? StatePrecision::bf16 : StatePrecision::fp32;
      shape.layout = checkpoints ? LayoutKind::fixed : LayoutKind::packed;
      shape.checkpoints = checkpoints;
      const std::shared_ptr<const PreparedKernel> k = KernelRegistry::instance().prepare(s, target, shape);
      REQUIRE(k->entry);
      CHECK(k->entry->cubin.size() > 1000);
      CHECK(k->entry->manifest.entry_points.size() == k->plan.entries.size());
      if (!k->entry->dir.empty()) {
        // setmaxnreg roles (e.g. sm90_wgmma_c32's recurrence): ptxas honoured
        // them (C7508 would say it ignored them for an unknown entry count)
        const std::string log = test::read_text(k->entry->dir + "/compile.log");
        CHECK(log.find("C7508") == std::string::npos);
      }
      for (const cache::EntryPoint& ep : k->entry->manifest.entry_points) {
        INFO(ep.name << " " << ep.resources.dump());
        CHECK(ep.resources.value("registers", 0) > 0);
        CHECK(ep.resources.value("spill_store_bytes", -1) >= 0);
        CHECK(ep.resources.value("spill_store_bytes", -1) <= allowed_spill_bytes(s.name, name));
        CHECK(ep.resources.value("stack_frame_bytes", -1) <= allowed_stack_frame(s.name, name));
        // wgmma entries keep their pipeline: no serialization, no injected waits
        CHECK_FALSE(ep.resources.value("wgmma_serialized", false));
        CHECK_FALSE(ep.resources.value("wgmma_wait_injected", false));
      }
      for (const EntryPlan& e : k->plan.entries) {
        CHECK(e.launch.dynamic_smem <= target.max_smem_per_block);
      }
      ++compiled;
    }
    }
  }
  CHECK(compiled >= 6);
}

// The prepare fragment's multi-chunk path (a 2-slot ring, chunk i + 1 loading
// while chunk i is prepared) is not in a shipped schedule: on the H200 it was
// slower (docs/bench/archive/LOG.md, v13). It stays compiled and resource-checked
// here so that the fragment keeps supporting it. Since the step's operand
// tiles are key-major (each thread holds a half's 8 rows of six operands until
// its 16-byte stores) the loop over chunks spills 4 bytes at this occupancy
// (96 registers); it may spill at most 8.
TEST_CASE("a prepare kernel with a 2-slot ring and 4 chunks per CTA compiles with at most 8 bytes of spills", "[runtime][compile]") {
  nlohmann::json doc = test::shipped_schedule_json("sm90_wgmma_c16");
  nlohmann::json& prepare = doc["kernels"][0];
  prepare["pipeline"]["stages"] = 2;
  prepare["chunks_per_cta"] = 4;
  prepare["min_blocks_per_sm"] = 5;
  for (nlohmann::json& b : prepare["smem"]["buffers"]) {
    const std::string name = b["name"];
    if (name == "kd_lo" || name == "qd_lo" || name == "ki_lo" || name == "lmat" || name == "tt" || name == "rnorm" ||
        name == "beta") {
      b["region"] = "shared";
    }
  }
  doc["name"] = "sm90_wgmma_c16_ring2";
  const Schedule s = parse_schedule(doc, "edited.json");
  const KernelPlan plan = lower(validate(s, *find_target("sm_90a")), ShapeKey{});
  CHECK(plan.entries[0].launch.chunks_per_cta == 4);
  CHECK(plan.entries[0].pipeline.stages == 2);
  const std::shared_ptr<const PreparedKernel> k = KernelRegistry::instance().prepare(s, *find_target("sm_90a"), ShapeKey{});
  for (const cache::EntryPoint& ep : k->entry->manifest.entry_points) {
    INFO(ep.name << " " << ep.resources.dump());
    const bool prepare = ep.name.ends_with("_prepare");
    const int allowed = prepare ? 8 : 0;
    CHECK(ep.resources.value("spill_store_bytes", -1) >= 0);
    CHECK(ep.resources.value("spill_store_bytes", -1) <= allowed);
    CHECK(ep.resources.value("stack_frame_bytes", -1) <= allowed);
    if (prepare) {
      CHECK(ep.resources.value("registers", 0) <= 65536 / (128 * 5)); // __launch_bounds__(128, 5)
    }
  }
}

// Issue 5: the fused M128 kernel for Blackwell (tcgen05 instructions, no
// spills at 960 threads, the plan's dynamic SMEM) and, from the same plan, its
// sm_90a proxy (no tcgen05 instruction; the emulated MMA may spill a few
// bytes: it only has to be right, and only on the H200).
TEST_CASE("the fused M128 kernel compiles for Blackwell and, with only its TMEM/MMA fragment replaced, for the sm_90a proxy",
          "[runtime][compile][tcgen05]") {
  const Schedule& s = *find_shipped_schedule("sm100_m128_c32");
  ShapeKey shape;
  for (const char* name : {"sm_100a", "sm_100f", "sm_103a", "sm_90a_proxy"}) {
    INFO(name);
    const Target target = *find_target(name);
    const std::shared_ptr<const PreparedKernel> k = KernelRegistry::instance().prepare(s, target, shape);
    REQUIRE(k->entry);
    const std::string text = emit_cuda(k->plan).text;
    const bool proxy = target.tcgen05_proxy;
    CHECK((text.find("tcgen05.mma.cta_group::1.kind::f16") != std::string::npos) == !proxy);
    CHECK((text.find("tcgen05.alloc.cta_group::1.sync") != std::string::npos) == !proxy);
    CHECK((text.find("kdajit fragment: tcgen05/proxy_ops") != std::string::npos) == proxy);
    REQUIRE(k->entry->manifest.entry_points.size() == 1);
    const nlohmann::json& r = k->entry->manifest.entry_points[0].resources;
    INFO(r.dump());
    CHECK(r.value("registers", 0) <= 64); // 960 threads: at most 64 registers each
    if (!proxy) {
      CHECK(r.value("spill_store_bytes", -1) == 0);
      CHECK(r.value("stack_frame_bytes", -1) == 0);
    }
    const ValidatedSchedule v = validate(s, target);
    CHECK(k->plan.entries[0].launch.dynamic_smem == v.kernels()[0].smem.total_bytes);
    CHECK(k->plan.entries[0].launch.threads == 960);
  }
}

// Issue 24: both SM120 designs compile for sm_120a and plain sm_120 (CC 12.1)
// without spills (every shape: the test above), and their sm_90a proxy is the same plan: the same SMEM per
// kernel (within SM120's 101,376 B), the same launch shape.
TEST_CASE("the SM120 designs compile for sm_120a, sm_120 and, as the same plan, the sm_120a proxy",
          "[runtime][compile][sm120]") {
  const char* design = GENERATE("sm120_decomposed_c16", "sm120_c32");
  INFO(design);
  const Schedule& s = *find_shipped_schedule(design);
  ShapeKey shape;
  const ValidatedSchedule native = validate(s, *find_target("sm_120a"));
  for (const char* name : {"sm_120a", "sm_120", "sm_120a_proxy"}) {
    INFO(name);
    const Target target = *find_target(name);
    const std::shared_ptr<const PreparedKernel> k = KernelRegistry::instance().prepare(s, target, shape);
    REQUIRE(k->entry);
    const ValidatedSchedule v = validate(s, target);
    REQUIRE(v.kernels().size() == native.kernels().size());
    for (std::size_t i = 0; i < v.kernels().size(); ++i) {
      CHECK(v.kernels()[i].smem.total_bytes == native.kernels()[i].smem.total_bytes);
      CHECK(v.kernels()[i].smem.total_bytes <= 101'376);
    }
    for (const auto& ep : k->entry->manifest.entry_points) {
      INFO(ep.name << ": " << ep.resources.dump());
      CHECK(ep.resources.value("spill_store_bytes", -1) == 0);
      CHECK(ep.resources.value("spill_load_bytes", -1) == 0);
      CHECK(ep.resources.value("stack_frame_bytes", -1) <= allowed_stack_frame(design, name));
    }
    CHECK(k->entry->manifest.entry_points.size() == k->plan.entries.size());
  }
}
