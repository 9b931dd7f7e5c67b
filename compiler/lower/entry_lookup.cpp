#include "compiler/lower/passes.hpp"

#include <algorithm>
#include <cctype>

namespace kda {

const KernelRecipe* kernel_recipe_of(const FamilyRecipe& recipe, const EntryPlan& entry) {
  for (const KernelRecipe& r : recipe.kernels) {
    if (r.role == entry.role && r.fragment == entry.fragment) {
      return &r;
    }
  }
  return nullptr;
}

const ValidatedKernel* validated_kernel_of(const ValidatedSchedule& schedule, const EntryPlan& entry) {
  for (const ValidatedKernel& k : schedule.kernels()) {
    if (k.decl.name == entry.kernel) {
      return &k;
    }
  }
  return nullptr;
}

std::string constant_prefix(const std::string& name) {
  std::string out = name;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

} // namespace kda
