#include "compiler/errors.hpp"
#include "compiler/schedule.hpp"
#include "schedule_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using nlohmann::json;

namespace {

std::vector<Diagnostic> parse_problems(const json& document) {
  try {
    parse_schedule(document, "test.json");
  } catch (const ScheduleError& e) {
    return e.diagnostics();
  }
  return {};
}

bool has_problem(const std::vector<Diagnostic>& ds, const std::string& path, const std::string& fragment) {
  for (const Diagnostic& d : ds) {
    if (d.json_path == path && d.message.find(fragment) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("parse_schedule reads every field of a minimal schedule", "[compiler][parse]") {
  const Schedule s = parse_schedule(test::minimal_schedule_json(), "minimal.json");
  CHECK(s.name == "minimal");
  CHECK(s.family == Family::warp_mma);
  CHECK(s.targets == std::vector<std::string>{"sm_90", "sm_80"});
  CHECK(s.chunk_size == 16);
  CHECK(s.exponent_anchor == ExponentAnchor::none);
  CHECK(s.decomposition == Decomposition::fused);
  CHECK(s.grid == GridKind::direct);
  REQUIRE(s.kernels.size() == 1);
  const KernelDecl& k = s.kernels[0];
  CHECK(k.role == KernelRole::fused);
  CHECK(k.threads() == 160);
  CHECK(k.pipeline.stages == 2);
  CHECK(k.pipeline.producer_groups == 1);
  REQUIRE(k.smem.buffers.size() == 2);
  CHECK(k.smem.buffers[1].bytes() == 16 * 128 * 2);
  CHECK(k.smem.buffers[1].json_path == "/smem/buffers/1");
  CHECK(k.smem.buffers[1].alignment == 16);
  CHECK(k.phase_index("mqk") == 2);
  CHECK(k.phase_index("end") == 5);
}

TEST_CASE("parse_schedule reports every unknown key and wrong type at once", "[compiler][parse]") {
  json doc = test::minimal_schedule_json();
  doc["stagess"] = 3;
  doc["pipeline"]["depth"] = 2;
  doc["chunk_size"] = "16";
  doc["smem"]["buffers"][0]["shape"] = "16x128";
  doc["smem"]["buffers"][1]["region"] = "global";
  doc["state"]["precision"] = 32;
  const std::vector<Diagnostic> ds = parse_problems(doc);
  CHECK(ds.size() == 6);
  CHECK(has_problem(ds, "/stagess", "unknown key 'stagess'"));
  CHECK(has_problem(ds, "/pipeline/depth", "unknown key 'depth'"));
  CHECK(has_problem(ds, "/chunk_size", "expected an integer, found string"));
  CHECK(has_problem(ds, "/smem/buffers/0/shape", "expected an array, found string"));
  CHECK(has_problem(ds, "/smem/buffers/1/region", "unknown value 'global' (expected 'stage' or 'shared')"));
  CHECK(has_problem(ds, "/state/precision", "expected a string, found integer"));
}

TEST_CASE("parse_schedule rejects a non-object document and bad JSON text", "[compiler][parse]") {
  CHECK(has_problem(parse_problems(json::array()), "", "expected an object, found array"));
  REQUIRE_THROWS_AS(parse_schedule_text("{\"name\": ", "x.json"), ScheduleError);
  REQUIRE_THROWS_WITH(load_schedule_file("/nonexistent/x.json"), Catch::Contains("cannot read the file"));
}

TEST_CASE("a decomposed schedule keeps its kernels apart", "[compiler][parse]") {
  const Schedule s = test::shipped_schedule("portable_c16");
  CHECK(s.decomposition == Decomposition::decomposed);
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].role == KernelRole::prepare);
  CHECK(s.kernels[1].role == KernelRole::recurrence);
  CHECK(s.kernels[1].smem.buffers[0].json_path == "/kernels/1/smem/buffers/0");

  json doc = test::shipped_schedule_json("portable_c16");
  doc["smem"] = json::object();
  CHECK(has_problem(parse_problems(doc), "/smem", "belongs to each entry of 'kernels'"));
}
