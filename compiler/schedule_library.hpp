/// \file
/// The shipped schedules (schedules/*.json), embedded into the binary at build
/// time so the runtime and the router need no files on disk, and a schedule
/// author's own files (KDAJIT_SCHEDULE_PATH).
#pragma once

#include "compiler/embedded_file.hpp"
#include "compiler/schedule.hpp"

#include <span>
#include <string>
#include <vector>

namespace kda {

/// Every embedded schedule file, sorted by name.
std::span<const EmbeddedFile> embedded_schedules();

/// The shipped schedules, parsed (once per process).
const std::vector<Schedule>& shipped_schedules();

/// The shipped schedule named `name`, or nullptr.
const Schedule* find_shipped_schedule(const std::string& name);

/// The schedule files of a KDAJIT_SCHEDULE_PATH value: entries separated by
/// ':', each a .json file or a directory whose *.json files are read (sorted
/// by name); empty entries are skipped. Each is marked not shipped. Throws
/// ScheduleError for an unreadable or invalid file, a missing entry, or a
/// name that a shipped schedule or an earlier file already has.
std::vector<Schedule> schedules_on_path(const std::string& path_list);

/// What routing chooses among: the shipped schedules, then those of
/// KDAJIT_SCHEDULE_PATH (read once per process; schedule authors try a new
/// design with `kdajit selftest --schedule NAME` before it ships).
const std::vector<Schedule>& available_schedules();

/// The available schedule named `name`, or nullptr.
const Schedule* find_available_schedule(const std::string& name);

} // namespace kda
