/// \file
/// lower(): validated schedule + target + shape key -> KernelPlan.
#pragma once

#include "compiler/kernel_plan.hpp"
#include "compiler/validated_schedule.hpp"

namespace kda {

/// Runs the lowering passes in order (see lower.cpp, which reads as the table
/// of contents). Throws ScheduleError when the schedule's family has no
/// generator or its SMEM plan does not match the family's fragments.
KernelPlan lower(const ValidatedSchedule& schedule, const ShapeKey& shape);

} // namespace kda
