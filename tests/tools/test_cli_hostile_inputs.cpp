// Hostile but small inputs get their documented exit code at once, with a
// bounded report: special files and oversized files are refused before
// reading, deep JSON is refused while parsing, and repeated problems are
// reported once each, at most 100, then counted.
#include "compiler/errors.hpp"
#include "compiler/read_file.hpp"
#include "cache/bundle.hpp"
#include "cache/cache_test_support.hpp"
#include "test_support.hpp"
#include "tools/exit_codes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

using namespace kda;
using Catch::Contains;

namespace {

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

} // namespace

TEST_CASE("hostile files: FIFOs, devices and oversized files are refused before reading (exit 3)",
          "[tools][cli][hostile]") {
  cache::test::ScratchDir s;
  const std::string fifo = s / "fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string sparse = s / "sparse.json";
  {
    std::ofstream(sparse) << "";
  }
  REQUIRE(::truncate(sparse.c_str(), 8ll << 30) == 0); // 8 GiB, no blocks
  const struct {
    std::string path;
    std::string says;
  } cases[] = {{fifo, "not a regular file (a FIFO)"},
               {"/dev/zero", "not a regular file (a character device)"},
               {"/dev/urandom", "not a regular file (a character device)"},
               {sparse, "8589934592 bytes, more than the 16777216 bytes kdajit reads"},
               {s / "", "not a regular file (a directory)"}};
  for (const auto& c : cases) {
    INFO(c.path);
    const test::CliRun run = test::run_kdajit({"schedule", "check", c.path});
    CHECK(run.exit_code == tools::k_exit_io);
    CHECK_THAT(run.err, Contains(c.says));
  }
  // the same reader for AOT plans and, in the cache, for bundles
  CHECK(test::run_kdajit({"aot", "build", "--plan", fifo, "--out", s / "out"}).exit_code == tools::k_exit_io);
  CHECK_THROWS_WITH(cache::Bundle::read(fifo), Contains("not a regular file"));
  CHECK_THROWS_WITH(cache::Bundle::read("/dev/zero"), Contains("not a regular file"));
  CHECK(read_regular_file(sparse).text.empty());
}

TEST_CASE("hostile schedules: deep nesting is refused while parsing (exit 1)", "[tools][cli][hostile]") {
  cache::test::ScratchDir s;
  const std::string deep = s / "deep.json";
  std::string text = R"({"name": "x", "description": )";
  text += std::string(60'000, '[') + std::string(60'000, ']') + "}";
  cache::test::write_text(deep, text);
  const test::CliRun run = test::run_kdajit({"schedule", "check", deep});
  CHECK(run.exit_code == tools::k_exit_invalid_schedule);
  CHECK_THAT(run.out + run.err, Contains("not valid JSON: nested deeper than 64 levels"));
}

TEST_CASE("hostile schedules: 5,000 repeated targets give a bounded report (exit 1)", "[tools][cli][hostile]") {
  cache::test::ScratchDir s;
  // a shipped schedule, valid but for its targets
  nlohmann::json j = nlohmann::json::parse(test::read_text(test::source_path("schedules/portable_c16.json")));
  j["targets"] = std::vector<std::string>(5'000, "sm_90");
  const std::string path = s / "many.json";
  cache::test::write_text(path, j.dump());
  const test::CliRun run = test::run_kdajit({"schedule", "check", path});
  CHECK(run.exit_code == tools::k_exit_invalid_schedule);
  CHECK(lines_of(run.out) + lines_of(run.err) < 250);
  CHECK_THAT(run.out + run.err, Contains("more problems not listed"));
}

TEST_CASE("schedule errors: identical diagnostics once, at most 100, then a count", "[compiler][hostile]") {
  std::vector<Diagnostic> many;
  for (int i = 0; i < 500; ++i) {
    many.push_back({"/targets/" + std::to_string(i), "target 'sm_90' is listed twice"});
    many.push_back({"/targets/" + std::to_string(i), "target 'sm_90' is listed twice"}); // identical
  }
  const ScheduleError e("s.json", many);
  REQUIRE(e.diagnostics().size() == 101);
  CHECK(e.diagnostics().back().message == "and 400 more problems not listed");
  CHECK(e.diagnostics()[1].json_path == "/targets/1");
}
