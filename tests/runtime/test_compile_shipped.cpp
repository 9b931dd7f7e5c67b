// NVRTC compiles every shipped schedule that has a generator, for each target
// it lists (one shape key per schedule and target), through the same registry
// the runtime uses: the entries land in the test cache dir that every test
// shares (KDAJIT_CACHE_DIR, set by ctest).
#include "compiler/lower/family_recipe.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/errors.hpp"
#include "runtime/kernel_registry.hpp"

#include <catch2/catch.hpp>

using namespace kda;

TEST_CASE("every generatable shipped schedule compiles with NVRTC for each of its targets", "[runtime][compile]") {
  int compiled = 0;
  for (const Schedule& s : shipped_schedules()) {
    try {
      find_family_recipe(s);
    } catch (const ScheduleError&) {
      WARN(s.name << ": no generator yet, not compiled");
      continue;
    }
    for (const std::string& name : s.targets) {
      INFO(s.name << " on " << name);
      const Target target = *find_target(name);
      ShapeKey shape;
      shape.state_dtype = StatePrecision::fp32;
      shape.layout = LayoutKind::packed;
      const std::shared_ptr<const PreparedKernel> k = KernelRegistry::instance().prepare(s, target, shape);
      REQUIRE(k->entry);
      CHECK(k->entry->cubin.size() > 1000);
      CHECK(k->entry->manifest.entry_points.size() == k->plan.entries.size());
      for (const cache::EntryPoint& ep : k->entry->manifest.entry_points) {
        INFO(ep.name << " " << ep.resources.dump());
        CHECK(ep.resources.value("registers", 0) > 0);
        CHECK(ep.resources.value("spill_store_bytes", -1) == 0);
        CHECK(ep.resources.value("stack_frame_bytes", -1) == 0);
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
  CHECK(compiled >= 3);
}
