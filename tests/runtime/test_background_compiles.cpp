// The tiered JIT's background builds (runtime/background_compiles.hpp),
// without a GPU: a build runs NVRTC on its own thread and lands in the
// registry and the disk cache; a process that exits while one runs waits for
// it and exits cleanly, the entry whole; a failed build is reported once.
#include "compiler/errors.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "runtime/background_compiles.hpp"
#include "runtime/kernel_registry.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kda;

namespace {

// portable_c16 with a description no other test uses: a schedule id, and so
// a cache key, of its own (a miss in the shared test cache).
Schedule fresh_schedule() {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["description"] = "background build test " + std::to_string(std::random_device{}()) + "-" +
                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  return parse_schedule(doc, "background_build_test.json");
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

TEST_CASE("background builds: exit during a build waits for it and is clean", "[runtime][tiered]") {
  static const Schedule schedule = fresh_schedule();
  const Target sm90 = test::target_named("sm_90");
  const ShapeKey shape;
  (void)KernelRegistry::instance().nvrtc_version(); // NVRTC loaded before the fork, as a call would have
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    build_in_background(schedule, sm90, shape);
    std::exit(0); // while NVRTC compiles: exit waits for it
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && done == 0; ++i) { // at most 120 s
    done = waitpid(child, &status, WNOHANG);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL("the process did not exit within 120 s of a background build");
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // the child's build was published whole: this process finds it on disk
  CHECK(KernelRegistry::instance().prepare_if_built(schedule, sm90, shape) != nullptr);
}
