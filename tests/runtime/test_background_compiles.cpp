// The tiered JIT's background builds (runtime/background_compiles.hpp),
// without a GPU: a build runs NVRTC on its own thread and lands in the
// registry and the disk cache; a new process that exits while its first
// compile runs waits for it and exits cleanly, the entry whole; a failed
// build is reported once.
#include "cache/cache_test_support.hpp"
#include "compiler/errors.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "runtime/background_compiles.hpp"
#include "runtime/kernel_registry.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <sys/wait.h>
#include <thread>

using namespace kda;

namespace {

std::string unique_description() {
  return "background build test " + std::to_string(std::random_device{}()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// portable_c16 with the given description: a schedule id, and so a cache key,
// of its own (a miss in the shared test cache).
Schedule schedule_described(const std::string& description) {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["description"] = description;
  return parse_schedule(doc, "background_build_test.json");
}

Schedule fresh_schedule() {
  return schedule_described(unique_description());
}

} // namespace

TEST_CASE("background builds: a build lands in the registry; a failed one is reported once", "[runtime][tiered]") {
  static const Schedule schedule = fresh_schedule(); // outlives the build
  const Target sm90 = test::target_named("sm_90");
  const ShapeKey shape;
  CHECK(background_build(schedule, sm90, shape).state == BackgroundState::none);
  CHECK(KernelRegistry::instance().prepare_if_built(schedule, sm90, shape) == nullptr);
  CHECK(build_in_background(schedule, sm90, shape) == BackgroundState::building);
  CHECK(build_in_background(schedule, sm90, shape) != BackgroundState::none); // once per key
  wait_for_background_builds();
  CHECK(background_build(schedule, sm90, shape).state == BackgroundState::built);
  CHECK(KernelRegistry::instance().prepare_if_built(schedule, sm90, shape) != nullptr);

  // the same kernel through another schedule object (another build key): found
  // in the disk cache on the caller's thread, built at once, no thread
  static const Schedule same = schedule_described(schedule.document.at("description").get<std::string>());
  CHECK(build_in_background(same, sm90, shape) == BackgroundState::built);
  CHECK(background_build(same, sm90, shape).state == BackgroundState::built);

  // portable_c16 does not list sm_90a: its build fails (a ScheduleError)
  static const Schedule unlisted = fresh_schedule();
  const Target sm90a = test::target_named("sm_90a");
  CHECK(build_in_background(unlisted, sm90a, shape) == BackgroundState::failed); // keyed on the caller's thread
  wait_for_background_builds();
  const BackgroundStatus first = background_build(unlisted, sm90a, shape);
  CHECK(first.state == BackgroundState::failed);
  REQUIRE(first.report);
  CHECK_THAT(*first.report, Catch::Contains("background compile") && Catch::Contains("sm_90a"));
  const BackgroundStatus second = background_build(unlisted, sm90a, shape);
  CHECK(second.state == BackgroundState::failed);
  CHECK_FALSE(second.report); // reported once
}

TEST_CASE("background builds: a new process that exits during its first compile exits cleanly, the entry whole",
          "[runtime][tiered]") {
  // A new process each time, in which NVRTC has compiled nothing: NVRTC makes
  // objects it keeps during that first compile, and exit destroys them
  // (before the build's join, were that registered first: the process then
  // spun in NVRTC, from about 80 to 350 ms into the compile), in
  // tests/background_exit_process.cpp.
  // Under the sanitizers (scripts/sanitize.sh) a use after exit freed it is
  // a report and exit code 134: the child's output is then in the message.
  const cache::test::ScratchDir scratch;
  for (const int exit_after_ms : {0, 150, 400}) {
    const std::string description = unique_description();
    const std::string log = scratch / fmt::format("exit-after-{}ms.log", exit_after_ms);
    const std::string command = fmt::format("timeout 120 '{}' '{}' {} > '{}' 2>&1", KDAJIT_BACKGROUND_EXIT_PROCESS,
                                            description, exit_after_ms, log);
    const int status = std::system(command.c_str());
    INFO(command << "\n" << test::read_text(log));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0); // timeout's 124: it hung
    // the child's build was published whole: this process finds it on disk
    CHECK(KernelRegistry::instance().prepare_if_built(schedule_described(description), test::target_named("sm_90"),
                                                      ShapeKey{}) != nullptr);
  }
}
