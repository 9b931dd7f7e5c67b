#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

PlanFeatures plan_features(const ValidatedSchedule& v, const FamilyRecipe& recipe, const ShapeKey& shape) {
  const Schedule& s = v.schedule();
  const Eligibility& e = s.eligibility;
  std::vector<Diagnostic> problems;
  auto offered = [&](bool offers, bool implemented, const char* key, const char* what) {
    if (offers && !implemented) {
      problems.push_back({fmt::format("/eligibility/{}", key),
                          fmt::format("the {} generator does not implement {}, so the schedule cannot offer them",
                                      recipe.name, what)});
    }
    return offers && implemented;
  };
  PlanFeatures f;
  f.state_pool = offered(e.state_pool, recipe.features.state_pool, "state_pool", "state pools (ssm_state_indices)");
  f.seq_order = offered(e.seq_order, recipe.features.seq_order, "seq_order", "a caller's sequence order (seq_order)");
  f.checkpoints = offered(e.checkpoints, recipe.features.checkpoints, "checkpoints", "native checkpoints");
  if (shape.checkpoints && !f.checkpoints) {
    problems.push_back({"/eligibility/checkpoints",
                        fmt::format("the shape key {} compiles native checkpoints in, which schedule {} does not offer",
                                    shape.canonical(), s.name)});
  }
  if (!problems.empty()) {
    throw ScheduleError(s.source, std::move(problems));
  }
  // what the plan's kernels take: checkpoints only where compiled in
  f.checkpoints = shape.checkpoints;
  return f;
}

} // namespace kda
