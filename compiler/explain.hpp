/// \file
/// What `kdajit schedule explain` prints: the resolved SMEM layout of every
/// kernel (offsets, sizes, lifetimes, aliases, totals against the target's
/// limit: the largest plan's, and where buffers are declared `only_with`
/// checkpoints also a plan's without them) and the TMEM columns, as text or
/// JSON.
#pragma once

#include "compiler/validated_schedule.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace kda {

nlohmann::json explain_json(const ValidatedSchedule& schedule);
std::string explain_text(const ValidatedSchedule& schedule);

/// One line: "sm100_m128_c32 on sm_100a: valid, SMEM 207,012 B of 232,448 B, TMEM 256 columns (allocates 256)".
std::string summary_line(const ValidatedSchedule& schedule);

} // namespace kda
