#include "compiler/lower.hpp"

#include "compiler/lower/passes.hpp"

namespace kda {

KernelPlan lower(const ValidatedSchedule& v, const ShapeKey& shape) {
  const Schedule& s = v.schedule();
  const FamilyRecipe& recipe = find_family_recipe(s);

  KernelPlan plan;
  plan.schedule_name = s.name;
  plan.schedule_source = s.source;
  plan.target = v.target();
  plan.shape = shape;
  plan.family = s.family;
  plan.backend = recipe.backend;
  plan.exponent_anchor = s.exponent_anchor;
  plan.safe_lower_bound_magnitude = v.safe_lower_bound_magnitude();
  plan.lower_bound_min = s.eligibility.lower_bound.min;
  plan.lower_bound_max = s.eligibility.lower_bound.max;

  plan.tiles = resolve_tiles(v, shape);
  plan.entries = plan_entries(v, recipe, shape);
  plan_pipeline(v, plan.entries);
  check_buffer_needs(v, recipe);
  plan.features = plan_features(v, recipe, shape);
  place_smem(v, recipe, plan.features, plan.entries);
  plan_warp_roles(v, recipe, plan.entries);
  plan_launch(v, recipe, plan.entries);
  plan.umma = plan_umma(v, recipe);
  plan.tile_tensor_maps = plan_tile_tensor_maps(v, recipe);
  plan.checkpoint_tensor_map = plan_checkpoint_tensor_map(v, recipe, plan.features);
  plan.state_tensor_map = plan_state_tensor_map(v, recipe, shape);
  plan.abi = plan_arg_abi(plan.tile_tensor_maps, plan.checkpoint_tensor_map, plan.state_tensor_map);
  plan.workspace = plan_workspace(recipe);
  if (plan.umma && plan.umma->proxy) {
    plan.workspace.cta_scratch_bytes = plan.umma->tmem_image_bytes; // the proxy's per-CTA TMEM image
  }
  check_record_image(v, plan.workspace);
  plan.wgmma_n = recipe.wgmma_n;
  plan.prepare_overlap = plan_prepare_overlap(v, recipe);
  plan.prepare_walks_items = plan.prepare_overlap && s.grid == GridKind::persistent;
  check_walk_info(v, plan.prepare_walks_items);
  check_mqk_diagonal(s, recipe);
  plan.numerics = plan_numerics(s, recipe.inverse_block);
  plan.fragments = plan_fragments(recipe, plan.umma, plan.entries);
  plan.token = plan_token_kernel(recipe, plan);
  return plan;
}

} // namespace kda
