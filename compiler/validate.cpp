#include "compiler/validated_schedule.hpp"

#include "compiler/exponent_range.hpp"
#include "compiler/plan_smem.hpp"
#include "compiler/schedule_checks.hpp"

namespace kda {

int tmem_allocation_columns(int used) {
  if (used <= 0) {
    return 0;
  }
  int columns = 32;
  while (columns < used) {
    columns *= 2;
  }
  return columns;
}

ValidatedSchedule validate(const Schedule& schedule, const Target& target) {
  std::vector<Diagnostic> sink;
  check_schedule_fields(schedule, sink);
  check_target(schedule, target, sink);
  check_lower_bound_range(schedule, sink);
  check_state_and_tmem(schedule, target, sink);
  check_prepare_overlap(schedule, sink);

  std::vector<ValidatedKernel> kernels;
  for (const KernelDecl& kernel : schedule.kernels) {
    check_kernel_structure(schedule, kernel, target, sink);
    check_buffer_decls(kernel, sink);
    SmemLayout layout = plan_smem(kernel);
    check_smem_aliasing(kernel, layout, sink);
    check_smem_budget(kernel, layout, target, sink);
    kernels.push_back({kernel, std::move(layout)});
  }
  if (!sink.empty()) {
    throw ScheduleError(schedule.source, std::move(sink));
  }
  const TmemUse tmem{schedule.tmem_columns, tmem_allocation_columns(schedule.tmem_columns)};
  return ValidatedSchedule(schedule, target, std::move(kernels), tmem,
                           safe_lower_bound_magnitude(schedule.chunk_size, schedule.exponent_anchor));
}

} // namespace kda
