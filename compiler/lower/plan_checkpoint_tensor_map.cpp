#include "compiler/lower/passes.hpp"

namespace kda {

std::optional<CheckpointTensorMapPlan> plan_checkpoint_tensor_map(const ValidatedSchedule& v, const FamilyRecipe& recipe,
                                                                  const PlanFeatures& features) {
  if (!features.checkpoints || recipe.checkpoint_tensor_map_cols == 0) {
    return std::nullopt;
  }
  return CheckpointTensorMapPlan{.box_cols = recipe.checkpoint_tensor_map_cols, .box_rows = v.schedule().m_tile};
}

} // namespace kda
