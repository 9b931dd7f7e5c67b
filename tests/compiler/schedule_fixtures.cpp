#include "schedule_fixtures.hpp"

#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

namespace kda::test {

nlohmann::json minimal_schedule_json() {
  return nlohmann::json::parse(R"({
    "name": "minimal", "family": "warp_mma", "targets": ["sm_90", "sm_80"], "chunk_size": 16, "m_tile": 128,
    "state": {"precision": "fp32", "residence": "registers"},
    "pipeline": {"stages": 2},
    "warp_roles": [{"name": "mma", "warps": 4}, {"name": "load", "warps": 1}],
    "phases": ["load", "center", "mqk", "project", "store"],
    "smem": {"buffers": [
      {"name": "q_raw", "shape": [16, 128], "dtype": "bf16", "region": "stage", "lifetime": ["load", "center"]},
      {"name": "kd", "shape": [16, 128], "dtype": "bf16", "region": "stage", "lifetime": ["center", "project"]}]},
    "eligibility": {"lower_bound": {"min": -5.0, "max": 0.0}, "layouts": ["fixed"], "state_dtypes": ["fp32"]}
  })");
}

nlohmann::json shipped_schedule_json(const std::string& name) {
  return nlohmann::json::parse(read_text(source_path("schedules/" + name + ".json")));
}

Schedule shipped_schedule(const std::string& name) {
  return load_schedule_file(source_path("schedules/" + name + ".json"));
}

Target target_named(const std::string& name) {
  const std::optional<Target> t = find_target(name);
  REQUIRE(t.has_value());
  return *t;
}

KernelPlan lower_shipped(const std::string& name, const std::string& target, LayoutKind layout,
                         StatePrecision state, bool checkpoints) {
  ShapeKey key;
  key.layout = layout;
  key.state_dtype = state;
  key.checkpoints = checkpoints;
  return lower(validate(shipped_schedule(name), target_named(target)), key);
}

std::string validation_problems(const nlohmann::json& document, const std::string& target) {
  try {
    validate(parse_schedule(document, "test.json"), target_named(target));
    return "";
  } catch (const ScheduleError& e) {
    std::string out;
    for (const Diagnostic& d : e.diagnostics()) {
      out += d.to_string() + "\n";
    }
    return out;
  }
}

} // namespace kda::test
