#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

std::optional<PrepareOverlapModel> plan_prepare_overlap(const ValidatedSchedule& v, const FamilyRecipe& recipe) {
  const Schedule& s = v.schedule();
  if (!s.prepare_overlap) {
    return std::nullopt;
  }
  const PrepareOverlapDecl& o = *s.prepare_overlap;
  if (!recipe.prepare_overlap) {
    throw ScheduleError(s.source, {{o.json_path, fmt::format("the {} generator cannot run its prepare kernel beside "
                                                             "the recurrence (no chunk-major prepare grid or ready "
                                                             "flags); remove 'prepare_overlap'",
                                                             recipe.name)}});
  }
  return o.model;
}

} // namespace kda
