// KDAJIT_SCHEDULE_PATH: a schedule author's files join the shipped schedules
// (schedules_on_path), marked not shipped, so that routing takes one only
// after it passed `kdajit selftest` on the device; bad entries are refused
// with the file named.
#include "compiler/errors.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/router.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kda;
using Catch::Contains;

namespace {

const std::string k_broken = std::string(KDAJIT_SOURCE_DIR) + "/tests/schedules/broken_kr_over_qd.json";

std::string scratch_dir() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("kdajit-schedule-path-{}", getpid());
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string refusal(const std::string& path_list) {
  try {
    schedules_on_path(path_list);
    return "accepted";
  } catch (const ScheduleError& e) {
    return e.what();
  }
}

} // namespace

TEST_CASE("schedule path: an author's files join as not shipped; a directory's .json files are read",
          "[compiler][schedule_path]") {
  const std::vector<Schedule> one = schedules_on_path(":" + k_broken + ":");
  REQUIRE(one.size() == 1);
  CHECK(one[0].name == "broken_kr_over_qd");
  CHECK_FALSE(one[0].shipped);
  CHECK(find_shipped_schedule("portable_c16")->shipped);
  const std::string dir = scratch_dir();
  std::filesystem::copy_file(k_broken, dir + "/b.json", std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir + "/notes.txt") << "not a schedule";
  const std::vector<Schedule> from_dir = schedules_on_path(dir);
  REQUIRE(from_dir.size() == 1);
  CHECK(from_dir[0].source == dir + "/b.json");
  CHECK(schedules_on_path("").empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("schedule path: a missing entry, an invalid file and a taken name are refused with the file named",
          "[compiler][schedule_path]") {
  CHECK_THAT(refusal("/nonexistent/kdajit.json"), Contains("/nonexistent/kdajit.json"));
  CHECK_THAT(refusal("/nonexistent/kdajit.json"), Contains("does not exist"));
  const std::string dir = scratch_dir();
  std::ofstream(dir + "/bad.json") << "{\"name\": ";
  CHECK_THAT(refusal(dir + "/bad.json"), Contains("bad.json"));
  nlohmann::json shipped_name = nlohmann::json::parse(std::ifstream(k_broken));
  shipped_name["name"] = "portable_c16";
  std::ofstream(dir + "/taken.json") << shipped_name.dump();
  CHECK_THAT(refusal(dir + "/taken.json"), Contains("'portable_c16' is already the name of a shipped schedule"));
  CHECK_THAT(refusal(k_broken + ":" + k_broken), Contains("is already the name of a KDAJIT_SCHEDULE_PATH schedule"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("schedule path: routing takes an author's schedule only once it passed kdajit selftest, whatever it lists",
          "[compiler][schedule_path][router]") {
  std::vector<Schedule> schedules = schedules_on_path(k_broken); // lists sm_90, a target that ran on the H200
  schedules.push_back(*find_shipped_schedule("portable_c16"));
  DeviceDescription h200;
  h200.cc_major = 9;
  h200.sm_count = 132;
  ProblemShape p;
  p.batch = 1;
  p.seq_len = 64;
  p.total_tokens = 64;
  p.heads = 4;
  p.num_seqs = 1;
  p.beta_token_stride = 4;
  const Target sm90 = *find_target("sm_90");
  CHECK_FALSE(verified_on_hardware(schedules[0], sm90));
  CHECK(verified_on_hardware(schedules[1], sm90));
  const RouteDecision before = route(schedules, h200, p, {});
  INFO(before.explanation);
  CHECK(before.schedule->name == "portable_c16");
  CHECK_THAT(before.explanation, Contains("broken_kr_over_qd: eligible on sm_90"));
  CHECK_THAT(before.explanation, Contains("not self-tested here (kdajit selftest): ranked last"));
  RouteRequest request;
  request.selftest_passed = [](const Schedule& s, const Target&) { return s.name == "broken_kr_over_qd"; };
  // passed (as recorded): it competes like any other warp_mma schedule (it lists only a CC 9 target: "native")
  CHECK(route(schedules, h200, p, request).schedule->name == "broken_kr_over_qd");
  // and an explicit request runs it
  CHECK(route(schedules, h200, p, {.schedule = "broken_kr_over_qd"}).schedule->name == "broken_kr_over_qd");
}
