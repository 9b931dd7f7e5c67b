#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kda {

void place_smem(const ValidatedSchedule& v, const FamilyRecipe& recipe, std::vector<EntryPlan>& entries) {
  std::vector<Diagnostic> problems;
  for (EntryPlan& e : entries) {
    const KernelRecipe* kr = kernel_recipe_of(recipe, e);
    const ValidatedKernel* vk = validated_kernel_of(v, e);
    if (kr == nullptr || vk == nullptr) {
      continue; // chunk offsets: static SMEM only
    }
    const SmemLayout& layout = vk->smem;
    // Offsets are from the dynamic SMEM base, which the fragments declare with
    // the plan's base alignment.
    for (const std::string& needed : kr->buffers) {
      if (layout.find(needed) == nullptr) {
        problems.push_back({vk->decl.json_path + "/smem/buffers",
                            fmt::format("fragment {} needs a buffer '{}' that kernel '{}' does not declare",
                                        kr->fragment, needed, vk->decl.name)});
      }
    }
    for (std::size_t i = 0; i < layout.buffers.size(); ++i) {
      const PlacedBuffer& b = layout.buffers[i];
      if (std::find(kr->buffers.begin(), kr->buffers.end(), b.name) == kr->buffers.end()) {
        problems.push_back({b.json_path, fmt::format("buffer '{}' is not used by fragment {} (it uses: {})", b.name,
                                                     kr->fragment, fmt::join(kr->buffers, ", "))});
        continue;
      }
      const BufferDecl& decl = vk->decl.smem.buffers[i];
      SmemSymbol sym;
      sym.name = constant_prefix(b.name);
      sym.buffer = b.name;
      sym.region = b.region;
      sym.offset = b.region == Region::stage ? b.offset : layout.shared_offset + b.offset;
      sym.bytes = b.bytes;
      sym.pitch = decl.shape.empty() ? 0 : decl.shape.back();
      e.smem.push_back(sym);
    }
    e.stage_bytes = layout.stage_bytes;
  }
  if (!problems.empty()) {
    throw ScheduleError(v.schedule().source, std::move(problems));
  }
}

} // namespace kda
