#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kda {

void plan_warp_roles(const ValidatedSchedule& v, const FamilyRecipe& recipe, std::vector<EntryPlan>& entries) {
  std::vector<Diagnostic> problems;
  for (EntryPlan& e : entries) {
    const KernelRecipe* kr = kernel_recipe_of(recipe, e);
    const ValidatedKernel* vk = validated_kernel_of(v, e);
    if (kr == nullptr || vk == nullptr) {
      continue; // chunk offsets: one anonymous role
    }
    std::vector<std::string> declared;
    int first = 0;
    for (const WarpRole& role : vk->decl.warp_roles) {
      e.roles.push_back({constant_prefix(role.name), role.warps, first, role.registers.value_or(0)});
      declared.push_back(role.name);
      first += role.warps;
    }
    std::vector<std::string> wanted = kr->roles;
    std::sort(declared.begin(), declared.end());
    std::sort(wanted.begin(), wanted.end());
    if (declared != wanted) {
      problems.push_back({vk->decl.json_path + "/warp_roles",
                          fmt::format("fragment {} assigns work to the warp roles {}; kernel '{}' declares {}", kr->fragment,
                                      fmt::join(kr->roles, ", "), vk->decl.name, fmt::join(declared, ", "))});
    }
  }
  if (!problems.empty()) {
    throw ScheduleError(v.schedule().source, std::move(problems));
  }
}

} // namespace kda
