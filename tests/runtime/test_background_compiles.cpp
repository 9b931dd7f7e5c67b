// The tiered JIT's background builds (runtime/background_compiles.hpp),
// without a GPU: a build runs NVRTC on its own thread and lands in the
// registry and the disk cache; a new process that exits while its first
// compile runs waits for it and exits cleanly, the entry whole; a failed
// build is reported once.
#include "compiler/errors.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "runtime/background_compiles.hpp"
#include "runtime/kernel_registry.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
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
  build_in_background(schedule, sm90, shape);
  build_in_background(schedule, sm90, shape); // once per key
  wait_for_background_builds();
  CHECK(background_build(schedule, sm90, shape).state == BackgroundState::built);
  CHECK(KernelRegistry::instance().prepare_if_built(schedule, sm90, shape) != nullptr);

  // portable_c16 does not list sm_90a: its build fails (a ScheduleError)
  static const Schedule unlisted = fresh_schedule();
  const Target sm90a = test::target_named("sm_90a");
  build_in_background(unlisted, sm90a, shape);
  wait_for_background_builds();
  const BackgroundStatus first = background_build(unlisted, sm90a, shape);
  CHECK(first.state == BackgroundState::failed);
  REQUIRE(first.report);
  CHECK_THAT(*first.report, Catch::Contains("background compile") && Catch::Contains("sm_90a"));
  const BackgroundStatus second = background_build(unlisted, sm90a, shape);
  CHECK(second.state == BackgroundState::failed);
  CHECK_FALSE(second.report); // reported once
}

// The process of the test below (hidden; that test runs it with the
// environment set): loads NVRTC as a call that keys a kernel does, starts a
// build, exits the given number of milliseconds later.
TEST_CASE("background builds: (the exiting process)", "[.][background-exit-child]") {
  const char* description = std::getenv("KDAJIT_TEST_BUILD_DESCRIPTION");
  const char* exit_after_ms = std::getenv("KDAJIT_TEST_EXIT_AFTER_MS");
  REQUIRE(description != nullptr);
  REQUIRE(exit_after_ms != nullptr);
  static const Schedule schedule = schedule_described(description);
  (void)KernelRegistry::instance().nvrtc_version();
  build_in_background(schedule, test::target_named("sm_90"), ShapeKey{});
  std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(exit_after_ms)));
  std::exit(0); // while NVRTC compiles: exit waits for the build
}

TEST_CASE("background builds: a new process that exits during its first compile exits cleanly, the entry whole",
          "[runtime][tiered]") {
  // A new process each time, in which NVRTC has compiled nothing: NVRTC makes
  // objects it keeps during that first compile, and exit destroys them
  // (before the build's join, were that registered first: the process then
  // spun in NVRTC, from about 80 to 350 ms into the compile).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const int exit_after_ms : {0, 150, 400}) {
    const std::string description = unique_description();
    const std::string command = fmt::format("KDAJIT_TEST_BUILD_DESCRIPTION='{}' KDAJIT_TEST_EXIT_AFTER_MS={} timeout 120 "
                                            "'{}' '[background-exit-child]' > /dev/null 2>&1",
                                            description, exit_after_ms, self);
    INFO(command);
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0); // timeout's 124: it hung
    // the child's build was published whole: this process finds it on disk
    CHECK(KernelRegistry::instance().prepare_if_built(schedule_described(description), test::target_named("sm_90"),
                                                      ShapeKey{}) != nullptr);
  }
}
