#include "compiler/plan_smem.hpp"
#include "compiler/schedule.hpp"
#include "test_support.hpp"
#include "tools/exit_codes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

using namespace kda;
using Catch::Contains;

namespace {

std::string schedule_file(const std::string& name) {
  return test::source_path("schedules/" + name + ".json");
}

std::string bad_file(const std::string& name) {
  return test::source_path("tests/schedules/bad/" + name + ".json");
}

} // namespace

TEST_CASE("schedule check: valid schedules exit 0 with one line per target", "[tools][cli]") {
  const test::CliRun run = test::run_kdajit({"schedule", "check", schedule_file("sm100_m128_c32")});
  CHECK(run.exit_code == tools::k_exit_ok);
  CHECK_THAT(run.out, Contains("sm100_m128_c32 on sm_100a: valid, SMEM 227,620 B of 232,448 B, TMEM 256 columns"));
  CHECK_THAT(run.out, Contains("sm100_m128_c32 on sm_103a: valid"));
  const test::CliRun one = test::run_kdajit({"schedule", "check", schedule_file("sm120_c32"), "--target", "sm_120a"});
  CHECK(one.exit_code == tools::k_exit_ok);
  CHECK_THAT(one.out, Contains("sm120_c32 on sm_120a: valid, SMEM 93,232 B of 101,376 B"));
}

TEST_CASE("schedule check: an invalid schedule exits 1 and lists its problems", "[tools][cli]") {
  const test::CliRun run = test::run_kdajit({"schedule", "check", bad_file("live_overlap")});
  CHECK(run.exit_code == tools::k_exit_invalid_schedule);
  CHECK_THAT(run.out, Contains("/smem/buffers/3: 'ki' overlaps live buffer 'kd' in phase 'inverse' (bytes 8192..16383)"));
  // A valid schedule checked against a target it does not list is invalid there.
  const test::CliRun other = test::run_kdajit({"schedule", "check", schedule_file("sm120_c32"), "--target", "sm_90"});
  CHECK(other.exit_code == tools::k_exit_invalid_schedule);
  CHECK_THAT(other.out, Contains("/targets: the schedule does not list target sm_90"));
}

TEST_CASE("schedule check --json", "[tools][cli]") {
  const test::CliRun run =
      test::run_kdajit({"schedule", "check", "--json", schedule_file("portable_c16"), bad_file("tmem_over_512")});
  CHECK(run.exit_code == tools::k_exit_invalid_schedule);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  CHECK(j["valid"] == false);
  REQUIRE(j["results"].size() == 8); // seven targets of portable_c16, one of the bad case
  CHECK(j["results"][0]["valid"] == true);
  CHECK(j["results"][0]["smem"][1]["kernel"] == "recurrence");
  CHECK(j["results"][7]["valid"] == false);
  CHECK(j["results"][7]["diagnostics"][0]["path"] == "/tmem_columns");
}

TEST_CASE("schedule explain shows offsets, lifetimes, aliases, totals and TMEM", "[tools][cli]") {
  const test::CliRun run =
      test::run_kdajit({"schedule", "explain", schedule_file("sm100_m128_c32"), "--target", "sm_100a"});
  CHECK(run.exit_code == tools::k_exit_ok);
  CHECK_THAT(run.out, Contains("kr_t             24576   32767   8,192  bf16[128x32]     [restore, update)        qd_lo"));
  CHECK_THAT(run.out, Contains("[restore, residual)"));
  CHECK_THAT(run.out, Contains("total              227,620 B of 232,448 B on sm_100a (4,828 B headroom)"));
  CHECK_THAT(run.out, Contains("TMEM: 256 columns used, 256 allocated"));

  const test::CliRun js =
      test::run_kdajit({"schedule", "explain", "--json", schedule_file("sm100_n16_c16"), "--target=sm_100f"});
  REQUIRE(js.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(js.out);
  const nlohmann::json& r = j["results"][0];
  CHECK(r["target"] == "sm_100f");
  CHECK(r["tmem"]["used_columns"] == 224);
  CHECK(r["tmem"]["allocated_columns"] == 256);
  CHECK(r["kernels"][0]["smem"]["total_bytes"] == 224'676);
  CHECK(r["kernels"][0]["smem"]["buffers"][1]["name"] == "ki");
  CHECK(r["kernels"][0]["smem"]["buffers"][1]["alias"] == "q_raw");
  CHECK(r["kernels"][0]["smem"]["buffers"][1]["offset"] == 0);
  CHECK(r["kernels"][0]["smem"]["total_bytes_without_checkpoints"].is_null()); // no buffer only with them

  // sm90_wgmma_c32's recurrence declares its checkpoint tile and barriers
  // only_with checkpoints: both totals, the plain one as a plain plan lays out
  const test::CliRun c32 = test::run_kdajit({"schedule", "explain", schedule_file("sm90_wgmma_c32")});
  CHECK(c32.exit_code == tools::k_exit_ok);
  CHECK_THAT(c32.out, Contains("total              196,616 B of 232,448 B on sm_90a (35,832 B headroom)"));
  CHECK_THAT(c32.out, Contains("no checkpoints     161,376 B (plans without checkpoints leave out"));
  const test::CliRun c32_json =
      test::run_kdajit({"schedule", "explain", "--json", schedule_file("sm90_wgmma_c32")});
  REQUIRE(c32_json.exit_code == tools::k_exit_ok);
  const nlohmann::json c32_doc = nlohmann::json::parse(c32_json.out);
  const nlohmann::json& recurrence = c32_doc["results"][0]["kernels"][1]["smem"];
  CHECK(recurrence["total_bytes"] == 196'616);
  CHECK(recurrence["total_bytes_without_checkpoints"] == 161'376);
  CHECK(recurrence["total_bytes_without_checkpoints"] ==
        kda::plan_smem(kda::load_schedule_file(schedule_file("sm90_wgmma_c32")).kernels[1], false).total_bytes);
}

TEST_CASE("usage errors exit 2, unreadable files exit 3", "[tools][cli]") {
  CHECK(test::run_kdajit({}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"frobnicate"}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"schedule"}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"schedule", "check"}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"schedule", "check", schedule_file("sm120_c32"), "--bogus"}).exit_code ==
        tools::k_exit_usage);
  const test::CliRun unknown_target =
      test::run_kdajit({"schedule", "explain", schedule_file("sm120_c32"), "--target", "sm_99"});
  CHECK(unknown_target.exit_code == tools::k_exit_usage);
  CHECK_THAT(unknown_target.err, Contains("unknown target 'sm_99'"));
  CHECK(test::run_kdajit({"schedule", "check", schedule_file("sm120_c32"), "--target"}).exit_code ==
        tools::k_exit_usage);
  const test::CliRun missing = test::run_kdajit({"schedule", "check", "/nonexistent/schedule.json"});
  CHECK(missing.exit_code == tools::k_exit_io);
  CHECK_THAT(missing.err, Contains("cannot read schedule '/nonexistent/schedule.json'"));
  CHECK(test::run_kdajit({"--help"}).exit_code == tools::k_exit_ok);
}

TEST_CASE("the kdajit binary maps results to the documented exit codes", "[tools][cli]") {
  // The same through the real executable (what scripts and CI call).
  const std::string binary = test::kdajit_binary();
  auto status = [&](const std::string& args) {
    const int raw = std::system((binary + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  CHECK(status("schedule check " + schedule_file("sm100_m64_c32")) == 0);
  CHECK(status("schedule check " + bad_file("smem_over_budget")) == 1);
  CHECK(status("schedule chek") == 2);
  CHECK(status("schedule explain /nonexistent.json") == 3);
}
