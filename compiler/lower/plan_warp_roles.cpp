#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace kda {
namespace {

std::string upper(const std::string& s) {
  std::string out = s;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

} // namespace

void plan_warp_roles(const ValidatedSchedule& v, const FamilyRecipe& recipe, std::vector<EntryPlan>& entries) {
  std::vector<Diagnostic> problems;
  for (EntryPlan& e : entries) {
    const KernelRecipe* kr = nullptr;
    for (const KernelRecipe& r : recipe.kernels) {
      if (r.role == e.role && r.fragment == e.fragment) {
        kr = &r;
      }
    }
    const ValidatedKernel* vk = nullptr;
    for (const ValidatedKernel& k : v.kernels()) {
      if (k.decl.name == e.kernel) {
        vk = &k;
      }
    }
    if (kr == nullptr || vk == nullptr) {
      continue; // chunk offsets: one anonymous role
    }
    std::vector<std::string> declared;
    int first = 0;
    for (const WarpRole& role : vk->decl.warp_roles) {
      e.roles.push_back({upper(role.name), role.warps, first});
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
