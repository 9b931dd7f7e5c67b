#include "compiler/lower/passes.hpp"

#include <algorithm>

namespace kda {

std::vector<std::string> plan_fragments(const FamilyRecipe& recipe, const std::optional<UmmaPlan>& umma,
                                        const std::vector<EntryPlan>& entries) {
  std::vector<std::string> fragments = recipe.common_fragments;
  if (umma && umma->proxy) {
    // the sm_90a proxy: only the tensor-memory and tcgen05.mma fragment differs
    std::replace(fragments.begin(), fragments.end(), std::string("tcgen05/ops"), recipe.proxy_ops_fragment);
  }
  for (const EntryPlan& e : entries) {
    if (std::find(fragments.begin(), fragments.end(), e.fragment) == fragments.end()) {
      fragments.push_back(e.fragment);
    }
  }
  return fragments;
}

} // namespace kda
