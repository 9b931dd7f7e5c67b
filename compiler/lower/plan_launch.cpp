#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kda {

int entry_registers(const KernelDecl& kernel) {
  std::int64_t total = 0;
  for (const WarpRole& role : kernel.warp_roles) {
    if (!role.registers) {
      return 0; // check_warp_roles: all roles or none
    }
    total += static_cast<std::int64_t>(*role.registers) * 32 * role.warps;
  }
  const std::int64_t threads = kernel.threads();
  // The CTA holds entry x threads registers; setmaxnreg moves them between
  // its warpgroups, so the entry count covers the roles' total (rounded up to
  // the allocation granularity of 8 per thread).
  return threads > 0 ? static_cast<int>((total + threads * 8 - 1) / (threads * 8) * 8) : 0;
}

void plan_launch(const ValidatedSchedule& v, const FamilyRecipe& recipe, std::vector<EntryPlan>& entries) {
  for (EntryPlan& e : entries) {
    if (e.role == KernelRole::sequence_table) {
      e.launch = {GridRule::single_block, recipe.chunk_offsets.threads, 0};
      continue;
    }
    for (const ValidatedKernel& k : v.kernels()) {
      if (k.decl.name != e.kernel) {
        continue;
      }
      e.launch.threads = k.decl.threads();
      // exclusive_sm: the whole per-block SMEM, so nothing runs beside it
      e.launch.dynamic_smem = k.decl.exclusive_sm ? v.target().max_smem_per_block : e.smem_bytes;
      e.launch.min_blocks_per_sm = k.decl.min_blocks_per_sm;
      e.launch.chunks_per_cta = k.decl.chunks_per_cta;
      e.launch.grid = k.decl.role == KernelRole::prepare        ? GridRule::chunks_by_heads
                      : v.schedule().grid == GridKind::persistent ? GridRule::persistent_items
                                                                  : GridRule::sequences_by_heads;
      e.launch.ctas_per_sm = k.decl.exclusive_sm ? 1 : std::max(1, k.decl.min_blocks_per_sm);
      e.launch.entry_registers = entry_registers(k.decl);
      e.launch.programmatic = k.decl.programmatic_launch;
      const KernelRecipe* kr = kernel_recipe_of(recipe, e);
      if (k.decl.programmatic_launch && (kr == nullptr || !kr->waits_for_prior_grid)) {
        throw ScheduleError(v.schedule().source, {{k.decl.json_path + "/programmatic_launch",
                                                fmt::format("fragment {} does not wait for the kernel before it "
                                                            "(wait_prior_grid), so it cannot start early",
                                                            kr == nullptr ? std::string("(none)") : kr->fragment)}});
      }
    }
  }
}

} // namespace kda
