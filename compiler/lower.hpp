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

/// The schedule's SMEM buffers against what its family's fragments address:
/// each buffer's dtype, and a shape at least the fragment's (ScheduleError
/// with each buffer's JSON path). Nothing for a family without a generator.
/// lower() makes the same check; `schedule check` calls this.
void check_against_family(const ValidatedSchedule& schedule);

} // namespace kda
