/// \file
/// The shipped schedules (schedules/*.json), embedded into the binary at build
/// time so the runtime and the router need no files on disk.
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

} // namespace kda
