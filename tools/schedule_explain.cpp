// kdajit schedule explain FILE... [--target T] [--json]
#include "compiler/explain.hpp"
#include "compiler/validated_schedule.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/schedule_inputs.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {

int schedule_explain_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  (void)err;
  const ParsedArgs parsed = parse_args(args, {"--json"}, {"--target"});
  if (parsed.positional.empty()) {
    throw UsageError("'schedule explain' needs at least one FILE");
  }
  target_option(parsed.option("--target"));
  const bool as_json = parsed.has("--json");
  nlohmann::json results = nlohmann::json::array();
  std::string text;
  bool all_valid = true;
  auto fail = [&](const std::string& file, const std::string& target, const ScheduleError& e) {
    all_valid = false;
    results.push_back({{"file", file}, {"target", target}, {"valid", false}, {"diagnostics", diagnostics_json(e)}});
    text += fmt::format("{}{}: invalid\n{}", file, target.empty() ? "" : " on " + target, diagnostics_text(e));
  };
  for (const std::string& file : parsed.positional) {
    Schedule schedule;
    try {
      schedule = read_schedule(file);
    } catch (const ScheduleError& e) {
      fail(file, "", e);
      continue;
    }
    const std::vector<Target> targets = targets_to_check(schedule, parsed.option("--target"));
    if (targets.empty()) {
      fail(file, "", ScheduleError(file, {{"/targets", "the schedule lists no known target"}}));
    }
    for (const Target& target : targets) {
      try {
        const ValidatedSchedule v = validate(schedule, target);
        results.push_back(explain_json(v));
        text += explain_text(v) + "\n";
      } catch (const ScheduleError& e) {
        fail(file, target.name, e);
      }
    }
  }
  if (as_json) {
    out << nlohmann::json{{"valid", all_valid}, {"results", results}}.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  } else {
    out << text;
  }
  return all_valid ? k_exit_ok : k_exit_invalid_schedule;
}

} // namespace kda::tools
