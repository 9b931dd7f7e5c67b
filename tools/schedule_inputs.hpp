/// \file
/// What `schedule check` and `schedule explain` share: reading schedule files
/// and choosing the targets to validate against.
#pragma once

#include "compiler/errors.hpp"
#include "compiler/schedule.hpp"
#include "compiler/target.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kda::tools {

/// An input file that cannot be read (exit code 3).
class InputError : public std::runtime_error {
public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// Reads and parses one schedule file. Throws InputError when unreadable and
/// ScheduleError when it does not parse.
Schedule read_schedule(const std::string& path);

/// A shipped schedule by name, else a schedule file (a path or a *.json name);
/// UsageError for a bare name that is neither.
Schedule schedule_by_name_or_file(const std::string& name_or_path);

/// `--target T` when given (unknown T is a UsageError), else every known target
/// the schedule lists. Empty when the schedule lists no known target.
std::vector<Target> targets_to_check(const Schedule& schedule, const std::optional<std::string>& target_option);

/// The target named by `--target`; throws UsageError for an unknown name.
std::optional<Target> target_option(const std::optional<std::string>& name);

/// {"path": ..., "message": ...} for each diagnostic.
nlohmann::json diagnostics_json(const ScheduleError& error);

/// The error's diagnostics, one indented line each.
std::string diagnostics_text(const ScheduleError& error);

} // namespace kda::tools
