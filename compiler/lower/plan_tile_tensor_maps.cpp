#include "compiler/lower/passes.hpp"

namespace kda {

std::optional<TileTensorMapPlan> plan_tile_tensor_maps(const ValidatedSchedule& v, const FamilyRecipe& recipe) {
  if (recipe.tile_tensor_map_cols == 0) {
    return std::nullopt;
  }
  TileTensorMapPlan t;
  t.box_cols = recipe.tile_tensor_map_cols;
  t.box_rows = v.schedule().chunk_size;
  t.tensors = {"q", "k", "g", "v"};
  return t;
}

} // namespace kda
