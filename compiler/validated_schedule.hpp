/// \file
/// A schedule proven to fit one target. Only `validate` constructs one.
#pragma once

#include "compiler/schedule.hpp"
#include "compiler/smem_layout.hpp"
#include "compiler/target.hpp"

#include <vector>

namespace kda {

struct TmemUse {
  int used_columns = 0;      ///< as declared by the schedule
  int allocated_columns = 0; ///< next power of two >= 32 (tcgen05.alloc), 0 when unused
};

struct ValidatedKernel {
  KernelDecl decl;
  SmemLayout smem;
};

class ValidatedSchedule {
public:
  const Schedule& schedule() const { return m_schedule; }
  const Target& target() const { return m_target; }
  const std::vector<ValidatedKernel>& kernels() const { return m_kernels; }
  const TmemUse& tmem() const { return m_tmem; }
  /// lower_bound is safe for this schedule iff |lower_bound| is below this.
  double safe_lower_bound_magnitude() const { return m_safe_lower_bound_magnitude; }

private:
  friend ValidatedSchedule validate(const Schedule& schedule, const Target& target);
  ValidatedSchedule(Schedule schedule, Target target, std::vector<ValidatedKernel> kernels, TmemUse tmem,
                    double safe_lower_bound_magnitude)
      : m_schedule(std::move(schedule)), m_target(std::move(target)), m_kernels(std::move(kernels)), m_tmem(tmem),
        m_safe_lower_bound_magnitude(safe_lower_bound_magnitude) {}

  Schedule m_schedule;
  Target m_target;
  std::vector<ValidatedKernel> m_kernels;
  TmemUse m_tmem;
  double m_safe_lower_bound_magnitude = 0.0;
};

/// Checks `schedule` against `target` and plans its SMEM. Gathers every
/// problem, then throws one `ScheduleError` listing them all.
ValidatedSchedule validate(const Schedule& schedule, const Target& target);

/// Columns tcgen05.alloc must request for `used` columns: the next power of
/// two >= 32, or 0 when `used` is 0.
int tmem_allocation_columns(int used);

} // namespace kda
