#include "tools/schedule_inputs.hpp"

#include "compiler/read_file.hpp"
#include "compiler/schedule_library.hpp"
#include "tools/args.hpp"

#include "tools/args.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kda::tools {

Schedule schedule_by_name_or_file(const std::string& name_or_path) {
  if (const Schedule* s = find_available_schedule(name_or_path)) {
    return *s;
  }
  if (name_or_path.find('/') == std::string::npos && name_or_path.find(".json") == std::string::npos) {
    throw UsageError("no shipped schedule is named '" + name_or_path + "' (or give a path to a .json file)");
  }
  return read_schedule(name_or_path);
}

Schedule read_schedule(const std::string& path) {
  const FileText file = read_regular_file(path);
  if (!file.problem.empty()) {
    throw InputError("cannot read schedule '" + path + "': " + file.problem);
  }
  return parse_schedule_text(file.text, path);
}

std::optional<Target> target_option(const std::optional<std::string>& name) {
  if (!name) {
    return std::nullopt;
  }
  std::optional<Target> t = find_target(*name);
  if (!t) {
    throw UsageError("unknown target '" + *name + "' (known: " + known_target_names() + ")");
  }
  return t;
}

std::vector<Target> targets_to_check(const Schedule& schedule, const std::optional<std::string>& option) {
  if (std::optional<Target> t = target_option(option)) {
    return {*t};
  }
  std::vector<Target> out;
  for (const std::string& name : schedule.targets) {
    const bool again = std::any_of(out.begin(), out.end(), [&](const Target& t) { return t.name == name; });
    if (std::optional<Target> t = find_target(name); t && !again) { // each target once, however often listed
      out.push_back(*t);
    }
  }
  return out;
}

nlohmann::json diagnostics_json(const ScheduleError& error) {
  nlohmann::json out = nlohmann::json::array();
  for (const Diagnostic& d : error.diagnostics()) {
    out.push_back({{"path", d.json_path}, {"message", d.message}});
  }
  return out;
}

std::string diagnostics_text(const ScheduleError& error) {
  std::string out;
  for (const Diagnostic& d : error.diagnostics()) {
    out += "  " + d.to_string() + "\n";
  }
  return out;
}

} // namespace kda::tools
