#include "compiler/lower/passes.hpp"

namespace kda {

void plan_launch(const ValidatedSchedule& v, const FamilyRecipe& recipe, std::vector<EntryPlan>& entries) {
  for (EntryPlan& e : entries) {
    if (e.kernel == "chunk_offsets") {
      e.launch = {GridRule::single_block, recipe.chunk_offsets.threads, 0};
      continue;
    }
    for (const ValidatedKernel& k : v.kernels()) {
      if (k.decl.name != e.kernel) {
        continue;
      }
      e.launch.threads = k.decl.threads();
      e.launch.dynamic_smem = k.smem.total_bytes;
      e.launch.min_blocks_per_sm = k.decl.min_blocks_per_sm;
      e.launch.chunks_per_cta = k.decl.chunks_per_cta;
      e.launch.grid = k.decl.role == KernelRole::prepare ? GridRule::chunks_by_heads : GridRule::sequences_by_heads;
    }
  }
}

} // namespace kda
