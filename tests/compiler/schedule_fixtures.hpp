/// \file
/// Small schedules for the compiler tests, built in code so each test states
/// exactly what it changes.
#pragma once

#include "compiler/kernel_plan.hpp"
#include "compiler/schedule.hpp"
#include "compiler/target.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace kda::test {

/// A valid warp_mma schedule for sm_90 with two stage buffers.
nlohmann::json minimal_schedule_json();

/// Parses a shipped schedule from schedules/NAME.json.
Schedule shipped_schedule(const std::string& name);
nlohmann::json shipped_schedule_json(const std::string& name);

Target target_named(const std::string& name);

/// The plan of a shipped schedule for a target and shape.
KernelPlan lower_shipped(const std::string& name, const std::string& target, LayoutKind layout,
                         StatePrecision state = StatePrecision::bf16, bool checkpoints = false);

/// The diagnostics of validating (or parsing) `document` against `target`
/// joined into one string, or "" when it is valid.
std::string validation_problems(const nlohmann::json& document, const std::string& target);

} // namespace kda::test
