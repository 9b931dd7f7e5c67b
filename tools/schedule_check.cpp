// kdajit schedule check FILE... [--target T] [--json]
#include "compiler/explain.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/schedule_inputs.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {
namespace {

using nlohmann::json;

struct CheckOutcome {
  json results = json::array();
  std::string text;
  bool all_valid = true;
};

void record_error(CheckOutcome& o, const std::string& file, const std::string& target, const ScheduleError& e) {
  o.all_valid = false;
  o.results.push_back({{"file", file}, {"target", target}, {"valid", false}, {"diagnostics", diagnostics_json(e)}});
  o.text += fmt::format("{}{}: invalid, {} problem{}\n{}", file, target.empty() ? "" : " on " + target,
                        e.diagnostics().size(), e.diagnostics().size() == 1 ? "" : "s", diagnostics_text(e));
}

void check_file(CheckOutcome& o, const std::string& file, const std::optional<std::string>& target_name) {
  Schedule schedule;
  try {
    schedule = read_schedule(file);
  } catch (const ScheduleError& e) {
    record_error(o, file, "", e);
    return;
  }
  const std::vector<Target> targets = targets_to_check(schedule, target_name);
  if (targets.empty()) {
    record_error(o, file, "",
                 ScheduleError(file, {{"/targets", "the schedule lists no known target (known: " +
                                                       known_target_names() + ")"}}));
    return;
  }
  for (const Target& target : targets) {
    try {
      const ValidatedSchedule v = validate(schedule, target);
      check_against_family(v);
      json r = {{"file", file}, {"schedule", schedule.name}, {"target", target.name}, {"valid", true}};
      json smem = json::array();
      for (const ValidatedKernel& k : v.kernels()) {
        smem.push_back({{"kernel", k.decl.name}, {"total_bytes", k.smem.total_bytes}});
      }
      r["smem"] = smem;
      r["smem_limit_bytes"] = target.max_smem_per_block;
      r["tmem"] = {{"used_columns", v.tmem().used_columns}, {"allocated_columns", v.tmem().allocated_columns}};
      o.results.push_back(r);
      o.text += summary_line(v) + "\n";
    } catch (const ScheduleError& e) {
      record_error(o, file, target.name, e);
    }
  }
}

} // namespace

int schedule_check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  (void)err;
  const ParsedArgs parsed = parse_args(args, {"--json"}, {"--target"});
  if (parsed.positional.empty()) {
    throw UsageError("'schedule check' needs at least one FILE");
  }
  target_option(parsed.option("--target")); // an unknown --target is a usage error before any file is read
  CheckOutcome outcome;
  for (const std::string& file : parsed.positional) {
    check_file(outcome, file, parsed.option("--target"));
  }
  if (parsed.has("--json")) {
    out << json{{"valid", outcome.all_valid}, {"results", outcome.results}}.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  } else {
    out << outcome.text;
  }
  return outcome.all_valid ? k_exit_ok : k_exit_invalid_schedule;
}

} // namespace kda::tools
