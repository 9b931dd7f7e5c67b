#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

void check_mqk_diagonal(const Schedule& s, const FamilyRecipe& recipe) {
  if (s.numerics.mqk_diagonal == recipe.mqk_diagonal) {
    return;
  }
  throw ScheduleError(s.source, {{"/numerics/mqk_diagonal",
                                  fmt::format("the {} generator forms Mqk's diagonal from {}: declare "
                                              "\"mqk_diagonal\": \"{}\" so that the emulated numerics are the kernel's",
                                              recipe.name,
                                              recipe.mqk_diagonal == MqkDiagonal::raw_rows
                                                  ? "the raw q and k rows (scale rq rk q.k in fp32)"
                                                  : "the anchored operands, like every other entry",
                                              to_string(recipe.mqk_diagonal))}});
}

} // namespace kda
