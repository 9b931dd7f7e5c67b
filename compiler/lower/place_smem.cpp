#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"
#include "compiler/plan_smem.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kda {
namespace {

// Raw bit containers for 16-bit floats, so that unions of buffers need no
// constructors.
const char* device_element_type(DType dtype) {
  switch (dtype) {
  case DType::bf16:
  case DType::fp16:
    return "::kda::u16";
  case DType::fp32:
    return "float";
  case DType::u32:
    return "::kda::u32";
  case DType::u64:
    return "::kda::u64";
  case DType::i32:
    return "int";
  case DType::i64:
    return "::kda::i64";
  }
  return "::kda::u8";
}

bool needs(const KernelRecipe& kr, const std::string& name) {
  return std::any_of(kr.buffers.begin(), kr.buffers.end(), [&](const BufferNeed& b) { return b.name == name; });
}

std::string need_names(const KernelRecipe& kr) {
  std::string out;
  for (const BufferNeed& b : kr.buffers) {
    out += (out.empty() ? "" : ", ") + b.name;
  }
  return out;
}

} // namespace

void place_smem(const ValidatedSchedule& v, const FamilyRecipe& recipe, const PlanFeatures& features,
                std::vector<EntryPlan>& entries) {
  std::vector<Diagnostic> problems;
  for (EntryPlan& e : entries) {
    const KernelRecipe* kr = kernel_recipe_of(recipe, e);
    const ValidatedKernel* vk = validated_kernel_of(v, e);
    if (kr == nullptr || vk == nullptr) {
      continue; // chunk offsets: static SMEM only
    }
    // validation planned every feature's buffers; the plan places its own
    const SmemLayout layout = plan_smem(vk->decl, features.checkpoints);
    // Offsets are from the dynamic SMEM base, which the fragments declare with
    // the plan's base alignment.
    for (const BufferNeed& needed : kr->buffers) {
      if (layout.find(needed.name) == nullptr) {
        problems.push_back({vk->decl.json_path + "/smem/buffers",
                            fmt::format("fragment {} needs a buffer '{}' that kernel '{}' does not declare",
                                        kr->fragment, needed.name, vk->decl.name)});
      }
    }
    for (std::size_t i = 0; i < layout.buffers.size(); ++i) {
      const PlacedBuffer& b = layout.buffers[i];
      if (!needs(*kr, b.name)) {
        problems.push_back({b.json_path, fmt::format("buffer '{}' is not used by fragment {} (it uses: {})", b.name,
                                                     kr->fragment, need_names(*kr))});
        continue;
      }
      const BufferDecl& decl = vk->decl.smem.buffers[i];
      SmemSymbol sym;
      sym.name = constant_prefix(b.name);
      sym.buffer = b.name;
      sym.region = b.region;
      sym.offset = b.region == Region::stage ? b.offset : layout.shared_offset + b.offset;
      sym.bytes = b.bytes;
      sym.pitch = decl.shape.empty() || !b.present ? 0 : decl.shape.back();
      sym.c_type = device_element_type(decl.dtype);
      sym.elements = b.present ? decl.elements() : 0;
      sym.present = b.present;
      e.smem.push_back(sym);
    }
    e.stage_bytes = layout.stage_bytes;
    e.smem_bytes = layout.total_bytes;
  }
  if (!problems.empty()) {
    throw ScheduleError(v.schedule().source, std::move(problems));
  }
}

} // namespace kda
