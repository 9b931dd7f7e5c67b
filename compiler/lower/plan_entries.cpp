#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {
namespace {

EntryPlan entry_for(const std::string& schedule, const std::string& kernel, const KernelRecipe& recipe) {
  EntryPlan e;
  e.entry_name = fmt::format("kda_prefill_{}_{}", schedule, kernel);
  e.kernel = kernel;
  e.role = recipe.role;
  e.fragment = recipe.fragment;
  e.call = recipe.call;
  e.plan_namespace = kernel;
  return e;
}

} // namespace

std::vector<EntryPlan> plan_entries(const ValidatedSchedule& v, const FamilyRecipe& recipe, const ShapeKey& shape) {
  std::vector<EntryPlan> entries;
  if (shape.layout == LayoutKind::packed && !recipe.chunk_offsets.fragment.empty()) {
    entries.push_back(entry_for(v.schedule().name, "chunk_offsets", recipe.chunk_offsets));
  }
  std::vector<Diagnostic> problems;
  for (const KernelRecipe& kr : recipe.kernels) {
    const ValidatedKernel* match = nullptr;
    for (const ValidatedKernel& k : v.kernels()) {
      if (k.decl.role == kr.role) {
        match = &k;
      }
    }
    if (match == nullptr) {
      problems.push_back({"/kernels", fmt::format("the {} generator needs a '{}' kernel", recipe.name,
                                                  to_string(kr.role))});
      continue;
    }
    entries.push_back(entry_for(v.schedule().name, match->decl.name, kr));
  }
  if (!problems.empty()) {
    throw ScheduleError(v.schedule().source, std::move(problems));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].launch_order = static_cast<int>(i);
  }
  return entries;
}

} // namespace kda
