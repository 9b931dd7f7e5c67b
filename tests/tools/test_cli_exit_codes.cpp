// Ordinary bad input gets its documented exit code, never 70 ("a bug in
// kdajit"): numbers that are not numbers or are out of range are usage
// errors (2) found before any device is looked at; bad content of a JSON
// input is 1; with --json every command prints one JSON document on stdout,
// also when it fails; a compiled kernel that does not reach the disk cache is 5.
#include "cache/cache_test_support.hpp"
#include "test_support.hpp"
#include "tools/exit_codes.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace kda;
using Catch::Contains;

namespace {

std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// stdout holds exactly one JSON document
nlohmann::json one_document(const test::CliRun& run) {
  INFO(run.out << run.err);
  REQUIRE(nlohmann::json::accept(run.out));
  return nlohmann::json::parse(run.out);
}

} // namespace

TEST_CASE("bench --no-state with a pool is a usage error, before any device", "[tools][cli][hostile]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"bench", "--no-state", "--pool"}, {"bench", "--no-state", "--pool-slots", "4096"}}) {
    const test::CliRun run = test::run_kdajit(args);
    INFO(fmt::format("kdajit {}: {}", fmt::join(args, " "), run.err));
    CHECK(run.exit_code == tools::k_exit_usage);
    CHECK_THAT(run.err, Contains("--no-state excludes --pool"));
    CHECK_THAT(run.err, !Contains("needs a GPU") && !Contains("no GPU") && !Contains("internal error"));
  }
}

TEST_CASE("numbers on the command line: not a number or out of range is exit 2, before any device",
          "[tools][cli][hostile]") {
  const std::vector<std::vector<std::string>> calls = {
      {"route", "--heads", "abc"},
      {"route", "--heads", "99999999999"},
      {"route", "--sequences", "0"},
      {"route", "--lower-bound", "1e999"},
      {"route", "--lower-bound", "nan"},
      {"route", "--cc", "9.0", "--sms", "-5"},
      {"route", "--cc", "9.x"},
      {"route", "--sms", "114"}, // --sms without --cc
      {"route", "--checkpoint-every", "24"},
      {"route", "--checkpoint-every", "12abc"},
      {"bench", "--iters", "abc"},
      {"bench", "--warmup", "-1"},
      {"bench", "--checkpoint-every", "0"},
      {"bench", "--seed", "1e3"},
      {"tune", "--iters", "12abc"},
      {"tune", "--timeout", "0"},
      {"selftest", "--timeout", "abc"},
      {"selftest", "--target", "sm_90a"},
      {"selftest", "--all", "--schedule", "portable_c16"},
      {"verify", "--fixed", "a,b"},
      {"verify", "--fixed", "2,0"},
      {"verify", "--seqlens", "3,x"},
      {"verify", "--heads", "0"},
      {"verify", "--state", "fp64"},
      {"accuracy", "--state", "fp64"},
      {"aot", "build", "--plan", test::source_path("aot/all-shipped.json"), "--out", "/nonexistent", "--jobs", "abc"},
  };
  for (const std::vector<std::string>& args : calls) {
    const test::CliRun run = test::run_kdajit(args);
    INFO(fmt::format("kdajit {}: {}", fmt::join(args, " "), run.err));
    CHECK(run.exit_code == tools::k_exit_usage);
    CHECK_THAT(run.err, !Contains("needs a GPU") && !Contains("no GPU") && !Contains("internal error"));
  }
  const test::CliRun range = test::run_kdajit({"route", "--heads", "99999999999"});
  CHECK_THAT(range.err, Contains("--heads takes an integer from 1 to 65535, got '99999999999'"));
}

TEST_CASE("with --json, one JSON document on stdout, also when the command fails", "[tools][cli][hostile]") {
  const test::CliRun version = test::run_kdajit({"--version", "--json"});
  CHECK(version.exit_code == tools::k_exit_ok);
  CHECK(one_document(version).contains("kdajit"));

  const test::CliRun usage = test::run_kdajit({"route", "--heads", "abc", "--json"});
  CHECK(usage.exit_code == tools::k_exit_usage);
  const nlohmann::json error = one_document(usage)["error"];
  CHECK(error["exit_code"] == tools::k_exit_usage);
  CHECK(error["kind"] == "usage");
  CHECK_THAT(error["message"].get<std::string>(), Contains("--heads"));

  // a schedule with invalid UTF-8: bad content (1), and the report still prints
  const cache::test::ScratchDir dir;
  const std::string utf8 = write_file(dir / "bad-utf8.json", "{\"name\": \"\xff\xfe\"}");
  const test::CliRun bad = test::run_kdajit({"schedule", "check", utf8, "--json"});
  CHECK(bad.exit_code == tools::k_exit_invalid_schedule);
  CHECK(one_document(bad)["valid"] == false);

  // compile prints its JSON and nothing else
  const test::CliRun compiled =
      test::run_kdajit({"compile", "--schedule", "portable_c16", "--target", "sm_90", "--json"});
  CHECK(compiled.exit_code == tools::k_exit_ok);
  CHECK(one_document(compiled)["results"].size() == 1);
}

TEST_CASE("AOT plans with bad content are exit 1, naming the problem", "[tools][cli][hostile]") {
  const cache::test::ScratchDir dir;
  const std::vector<std::pair<std::string, std::string>> plans = {
      {"{", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {R"({"schedules": 5, "targets": "listed", "shapes": [{}]})", "\"schedules\" is \"all\" or an array"},
      {R"({"schedules": [7], "targets": "listed", "shapes": [{}]})", "\"schedules\" is \"all\" or an array"},
      {R"({"schedules": "all", "targets": ["sm_999"], "shapes": [{}]})", "unknown target 'sm_999'"},
      {R"({"schedules": "all", "targets": "listed", "shapes": [{"state": 3}]})", "a shape is"},
      {R"({"schedules": "all", "targets": "listed", "shapes": [{"dtype": "bf16"}]})", "a shape is"},
      {R"({"schedules": "all", "targets": "listed", "shapes": []})", "non-empty array"},
      {R"({"schedules": "all", "targets": "listed", "shapes": [{}], "jobs": 4})", "unknown key 'jobs'"},
  };
  int n = 0;
  for (const auto& [text, message] : plans) {
    const std::string plan = write_file(dir / fmt::format("plan{}.json", n++), text);
    const test::CliRun run = test::run_kdajit({"aot", "build", "--plan", plan, "--out", dir / "out"});
    INFO(text << ": " << run.err);
    CHECK(run.exit_code == tools::k_exit_invalid_schedule);
    CHECK_THAT(run.err, Contains(message));
  }
  CHECK(!std::filesystem::exists(dir / "out"));
}

TEST_CASE("compile exits 5 when a compiled kernel cannot be written to the disk cache", "[tools][cli][hostile]") {
  // Through the binary, with every cache directory candidate unusable: the
  // cache is memory-only, so the kernel compiles but reaches no disk.
  const cache::test::ScratchDir dir;
  const std::string blocker = write_file(dir / "not-a-directory", "x");
  const std::string env = fmt::format("env -u KDAJIT_BUNDLE_PATH KDAJIT_CACHE_DIR={0} XDG_CACHE_HOME={0} HOME={0} TMPDIR={0} ",
                                      blocker);
  const std::string command = env + test::kdajit_binary() +
                              " compile --schedule portable_c16 --target sm_90 --json > " +
                              (dir / "out.json") + " 2> " + (dir / "err.txt");
  const int raw = std::system(command.c_str());
  const std::string out = test::read_text((dir / "out.json"));
  const std::string err = test::read_text((dir / "err.txt"));
  INFO(out << err);
  REQUIRE(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == tools::k_exit_cache);
  REQUIRE(nlohmann::json::accept(out));
  const nlohmann::json j = nlohmann::json::parse(out);
  CHECK(j["results"][0]["compiled"] == true);
  CHECK(j["results"][0]["in_disk_cache"] == false);
  CHECK_THAT(j["cache_error"].get<std::string>(), Contains("in memory only"));
  CHECK_THAT(err, Contains("kdajit compile:"));
}

TEST_CASE("KDAJIT_BUNDLE_PATH: a directory named x.kdab is no bundle, inside a listed directory or named", "[tools][cli][hostile]") {
  const cache::test::ScratchDir dir;
  std::filesystem::create_directories(dir / "bundles/x.kdab");
  const std::string command = fmt::format("KDAJIT_BUNDLE_PATH={0}:{0}/x.kdab {1} env --json > {2} 2> {3}",
                                          dir / "bundles", test::kdajit_binary(), dir / "out.json", dir / "err.txt");
  const int raw = std::system(command.c_str());
  const std::string out = test::read_text(dir / "out.json");
  const std::string err = test::read_text(dir / "err.txt");
  INFO(out << err);
  REQUIRE(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == tools::k_exit_ok);
  REQUIRE(nlohmann::json::accept(out));
  CHECK(nlohmann::json::parse(out)["bundles"].empty()); // x.kdab named directly is an (empty) directory of bundles
}
