// Each tests/schedules/bad/<case>.json must fail, and every line of
// <case>.expected must appear in one of its diagnostics ("path: message").
#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

using namespace kda;

namespace {

std::vector<std::string> problems_of(const std::string& path) {
  std::vector<std::string> out;
  try {
    const Schedule s = load_schedule_file(path);
    for (const std::string& name : s.targets) {
      if (const std::optional<Target> t = find_target(name)) {
        try {
          check_against_family(validate(s, *t)); // as `schedule check` does
        } catch (const ScheduleError& e) {
          for (const Diagnostic& d : e.diagnostics()) {
            out.push_back(d.to_string());
          }
        }
      }
    }
  } catch (const ScheduleError& e) {
    for (const Diagnostic& d : e.diagnostics()) {
      out.push_back(d.to_string());
    }
  }
  return out;
}

} // namespace

TEST_CASE("every bad schedule fails with its expected messages", "[compiler][schedules][bad]") {
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_path("tests/schedules/bad"))) {
    if (entry.path().extension() != ".json") {
      continue;
    }
    ++cases;
    const std::string path = entry.path().string();
    std::filesystem::path expected_path = entry.path();
    expected_path.replace_extension(".expected");
    INFO("case " << entry.path().filename().string());
    REQUIRE(std::filesystem::exists(expected_path));
    const std::vector<std::string> problems = problems_of(path);
    REQUIRE_FALSE(problems.empty());
    std::istringstream expected(test::read_text(expected_path.string()));
    std::string line;
    while (std::getline(expected, line)) {
      if (line.empty()) {
        continue;
      }
      bool found = false;
      for (const std::string& p : problems) {
        found = found || p.find(line) != std::string::npos;
      }
      std::string all;
      for (const std::string& p : problems) {
        all += "\n  " + p;
      }
      INFO("expected: " << line << "\nproblems:" << all);
      CHECK(found);
    }
  }
  CHECK(cases >= 20);
}
