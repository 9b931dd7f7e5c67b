#include "compiler/lower/family_recipe.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

const std::vector<FamilyRecipe>& all_family_recipes() {
  static const std::vector<FamilyRecipe> k_recipes = {{
      "warp_mma_decomposed_c16",
      Family::warp_mma,
      Decomposition::decomposed,
      16,
      {"common/prologue", "common/sequences"},
      {{KernelRole::prepare, "warp_mma/prepare_chunk", "kda::frag::prepare_chunk", 128,
        {"q_raw", "k_raw", "g_raw", "kd", "qd", "ki", "kr", "kd_lo", "qd_lo", "ki_lo", "lmat", "row_sums", "rnorm", "beta"}},
       {KernelRole::recurrence, "warp_mma/recurrence", "kda::frag::recurrence", 128,
        {"kd", "qd", "kr", "v", "tinv", "mqk", "beta", "gamma", "out"}}},
      {KernelRole::prepare, "common/sequences", "kda::compute_chunk_offsets", 256, {}},
      {{"KD", 0, 16 * 128 * 2},
       {"QD", 0, 16 * 128 * 2},
       {"KR", 0, 16 * 128 * 2},
       {"TINV", 0, 16 * 16 * 2},
       {"MQK", 0, 16 * 16 * 2},
       {"BETA", 0, 16 * 4},
       {"GAMMA", 0, 128 * 4}},
  }};
  return k_recipes;
}

const FamilyRecipe& find_family_recipe(const Schedule& s) {
  for (const FamilyRecipe& r : all_family_recipes()) {
    if (r.family == s.family && r.decomposition == s.decomposition && r.chunk_size == s.chunk_size) {
      return r;
    }
  }
  throw ScheduleError(s.source, {{"/family", fmt::format("no code generator yet for a {} {} design with chunk {} "
                                                         "(available: warp_mma decomposed chunk 16)",
                                                         to_string(s.family), to_string(s.decomposition),
                                                         s.chunk_size)}});
}

} // namespace kda
