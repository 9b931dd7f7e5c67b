#include "compiler/lower/passes.hpp"

namespace kda {

std::optional<StateTensorMapPlan> plan_state_tensor_map(const ValidatedSchedule& v, const FamilyRecipe& recipe,
                                                        const ShapeKey& shape) {
  if (recipe.state_tensor_map_cols == 0 || shape.state_dtype != StatePrecision::bf16) {
    return std::nullopt;
  }
  return StateTensorMapPlan{.box_cols = recipe.state_tensor_map_cols, .box_rows = v.schedule().m_tile};
}

} // namespace kda
