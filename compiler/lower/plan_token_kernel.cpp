#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {
namespace {

const SmemSymbol& symbol(const EntryPlan& entry, const std::string& buffer) {
  for (const SmemSymbol& s : entry.smem) {
    if (s.buffer == buffer && s.present) {
      return s;
    }
  }
  throw InternalError(fmt::format("the token kernel's entry {} has no SMEM buffer '{}'", entry.entry_name, buffer));
}

} // namespace

std::optional<TokenKernelPlan> plan_token_kernel(const FamilyRecipe& recipe, const KernelPlan& plan) {
  if (recipe.backend != Backend::llvm) {
    return std::nullopt;
  }
  if (plan.entries.size() != 1) {
    throw InternalError(fmt::format("the token kernel of {} has {} entries (one expected)", plan.schedule_name,
                                    plan.entries.size()));
  }
  const EntryPlan& e = plan.entries.front();
  TokenKernelPlan t;
  t.entry_name = e.entry_name;
  t.threads = e.launch.threads;
  t.stages = e.pipeline.stages;
  t.stage_bytes = e.stage_bytes;
  t.q_offset = symbol(e, "q").offset;
  t.k_offset = symbol(e, "k").offset;
  t.alpha_offset = symbol(e, "alpha").offset;
  t.norm_sums_offset = symbol(e, "norm_sums").offset;
  t.residence = recipe.residence.value_or(StateResidence::registers);
  if (t.residence == StateResidence::shared) {
    t.state_offset = symbol(e, "state").offset;
  }
  t.dynamic_smem = e.launch.dynamic_smem;
  t.layout = plan.shape.layout;
  t.state = plan.shape.state_dtype;
  t.checkpoints = plan.features.checkpoints;
  if (t.threads != plan.tiles.head_dim || t.stages != 2) {
    throw ScheduleError(plan.schedule_source,
                        {{"/warp_roles", fmt::format("the token kernel runs one thread per value row ({} threads) "
                                                     "with a two-slot ring; this schedule has {} threads and {} "
                                                     "stages",
                                                     plan.tiles.head_dim, t.threads, t.stages)}});
  }
  return t;
}

} // namespace kda
