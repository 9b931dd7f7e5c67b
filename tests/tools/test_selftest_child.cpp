// kdajit selftest's isolation: each candidate runs in a
// child process with a time limit; a child that hangs, crashes, exits
// otherwise or prints no result is a recorded failure, never the caller's
// crash. Shell children stand in for the kernels here (no GPU); the
// candidates are those of simulated devices.
#include "runtime/router.hpp"
#include "tools/child_process.hpp"
#include "tools/selftest.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace kda;
using namespace kda::tools;
using Catch::Contains;

namespace {

ChildOutcome sh(const std::string& script, int timeout_s) {
  return run_child({"/bin/sh", "-c", script}, timeout_s);
}

DeviceDescription device(int major, int minor, int sms) {
  DeviceDescription d;
  d.cc_major = major;
  d.cc_minor = minor;
  d.sm_count = sms;
  return d;
}

} // namespace

TEST_CASE("selftest child: a hang is killed at the limit and recorded as a failure", "[tools][selftest]") {
  const auto start = std::chrono::steady_clock::now();
  const ChildOutcome c = sh("echo started; sleep 30", 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(c.timed_out);
  CHECK(seconds < 10);
  CHECK(c.out == "started\n");
  const SelftestOutcome o = read_child_outcome(c, 1);
  CHECK_FALSE(o.pass);
  CHECK_THAT(o.detail, Contains("timed out after 1 s"));
}

TEST_CASE("selftest child: a crash, an exit code and missing output are failures", "[tools][selftest]") {
  const SelftestOutcome crash = read_child_outcome(sh("kill -SEGV $$", 10), 10);
  CHECK_FALSE(crash.pass);
  CHECK_THAT(crash.detail, Contains("signal 11"));
  const SelftestOutcome exit3 = read_child_outcome(sh("echo '{\"pass\": true, \"detail\": \"x\"}'; exit 3", 10), 10);
  CHECK_FALSE(exit3.pass);
  CHECK_THAT(exit3.detail, Contains("exit 3"));
  const SelftestOutcome garbage = read_child_outcome(sh("echo 'CUDA error: an illegal memory access'", 10), 10);
  CHECK_FALSE(garbage.pass);
  CHECK_THAT(garbage.detail, Contains("printed no result line"));
  const SelftestOutcome missing = read_child_outcome(run_child({"/nonexistent/kdajit"}, 10), 10);
  CHECK_FALSE(missing.pass);
  CHECK_THAT(missing.detail, Contains("exit 127"));
}

TEST_CASE("selftest child: its result line decides, and exit 8 is a failure it reports", "[tools][selftest]") {
  const SelftestOutcome ok =
      read_child_outcome(sh("echo compiling; echo '{\"pass\": true, \"detail\": \"4 cases within the tolerances\"}'", 10), 10);
  CHECK(ok.pass);
  CHECK(ok.detail == "4 cases within the tolerances");
  const SelftestOutcome tolerance =
      read_child_outcome(sh("echo '{\"pass\": false, \"detail\": \"output 3.2e-02\"}'; exit 8", 10), 10);
  CHECK_FALSE(tolerance.pass);
  CHECK(tolerance.detail == "output 3.2e-02");
}

TEST_CASE("selftest candidates: the families never run on such hardware, or every schedule with --all",
          "[tools][selftest]") {
  // every shipped CC 9.0 design has run on such hardware (wgmma, warp_mma,
  // the persistent grid) but sm90_wgmma_c32_split (hardware_verified false):
  // only it is checked there without --all
  const std::vector<SelftestCandidate> h200 = selftest_candidates(device(9, 0, 132), false, std::nullopt);
  std::vector<std::string> h200_names;
  for (const SelftestCandidate& c : h200) {
    h200_names.push_back(c.schedule->name);
  }
  CHECK(h200_names == std::vector<std::string>{"sm90_wgmma_c32_split"});
  const std::vector<SelftestCandidate> all = selftest_candidates(device(9, 0, 132), true, std::nullopt);
  int proxies = 0;
  bool wgmma = false;
  for (const SelftestCandidate& c : all) {
    proxies += c.target.name == "sm_90a_proxy" ? 1 : 0;
    wgmma = wgmma || c.schedule->name == "sm90_wgmma_c32";
  }
  CHECK(wgmma);
  CHECK(proxies == 3); // the three tcgen05 schedules through the sm_90a proxy
  const std::vector<SelftestCandidate> b200 = selftest_candidates(device(10, 0, 148), false, std::nullopt);
  REQUIRE(b200.size() == 3);
  for (const SelftestCandidate& c : b200) {
    CHECK(c.schedule->family == Family::tcgen05);
    CHECK(c.target.name == "sm_100f");
  }
  const std::vector<SelftestCandidate> one = selftest_candidates(device(9, 0, 132), false, std::string("portable_c16"));
  REQUIRE(one.size() == 1);
  CHECK(one[0].target.name == "sm_90");
}
