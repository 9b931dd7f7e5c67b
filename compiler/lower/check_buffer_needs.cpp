#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"
#include "compiler/lower.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kda {
namespace {

std::vector<std::int64_t> least_shape(const BufferNeed& need, std::int64_t m_tile, std::int64_t stages) {
  std::vector<std::int64_t> out;
  for (const ExtentNeed& e : need.min_shape) {
    out.push_back(e.constant + e.per_m_tile * m_tile + e.per_stage * stages);
  }
  return out;
}

bool holds(const std::vector<std::int64_t>& declared, const std::vector<std::int64_t>& least) {
  if (declared.size() != least.size()) {
    return false;
  }
  for (std::size_t i = 0; i < least.size(); ++i) {
    if (declared[i] < least[i]) {
      return false;
    }
  }
  return true;
}

} // namespace

void check_buffer_needs(const ValidatedSchedule& v, const FamilyRecipe& recipe) {
  std::vector<Diagnostic> problems;
  for (const ValidatedKernel& k : v.kernels()) {
    const auto kr = std::find_if(recipe.kernels.begin(), recipe.kernels.end(),
                                 [&](const KernelRecipe& r) { return r.role == k.decl.role; });
    if (kr == recipe.kernels.end()) {
      continue; // plan_entries reports a kernel no fragment implements
    }
    for (const BufferDecl& b : k.decl.smem.buffers) {
      const auto need = std::find_if(kr->buffers.begin(), kr->buffers.end(),
                                     [&](const BufferNeed& n) { return n.name == b.name; });
      if (need == kr->buffers.end()) {
        continue; // place_smem reports a buffer the fragment does not use
      }
      if (b.dtype != need->dtype) {
        problems.push_back({b.json_path + "/dtype", fmt::format("'{}' is {}; fragment {} reads and writes it as {}",
                                                                b.name, to_string(b.dtype), kr->fragment,
                                                                to_string(need->dtype))});
      }
      const std::vector<std::int64_t> least = least_shape(*need, v.schedule().m_tile, k.decl.pipeline.stages);
      if (!need->min_shape.empty() && !holds(b.shape, least)) {
        problems.push_back({b.json_path + "/shape",
                            fmt::format("'{}' is [{}]; fragment {} reaches into [{}] (m_tile {}, stages {}): "
                                        "declare at least that",
                                        b.name, fmt::join(b.shape, " x "), kr->fragment, fmt::join(least, " x "),
                                        v.schedule().m_tile, k.decl.pipeline.stages)});
      }
    }
  }
  if (!problems.empty()) {
    throw ScheduleError(v.schedule().source, std::move(problems));
  }
}

void check_against_family(const ValidatedSchedule& v) {
  const FamilyRecipe* recipe = nullptr;
  try {
    recipe = &find_family_recipe(v.schedule());
  } catch (const ScheduleError& e) {
    const std::vector<Diagnostic>& d = e.diagnostics();
    if (std::any_of(d.begin(), d.end(), [](const Diagnostic& x) { return x.json_path == "/grid"; })) {
      throw; // the family has a generator, not for this grid: the schedule cannot run
    }
    return; // no generator for this family yet: nothing addresses its buffers
  }
  check_buffer_needs(v, *recipe);
}

} // namespace kda
