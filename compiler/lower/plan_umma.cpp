#include "compiler/lower/passes.hpp"

#include "compiler/encodings/smem_descriptor.hpp"
#include "compiler/encodings/tcgen05_instruction.hpp"
#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

std::optional<UmmaPlan> plan_umma(const ValidatedSchedule& v, const FamilyRecipe& recipe) {
  if (!recipe.umma) {
    return std::nullopt;
  }
  const Schedule& s = v.schedule();
  UmmaPlan u;
  for (const auto& [name, n] : recipe.umma->shapes) {
    Tcgen05F16Instruction mma; // bf16 x bf16 -> fp32, K-major A and B
    mma.m = s.m_tile;
    mma.n = n;
    u.shapes.push_back({name, mma.m, mma.n, encode_tcgen05_f16_instruction(mma)});
  }
  for (const FamilyRecipe::Operand& o : recipe.umma->operands) {
    SmemDescriptorFields d;
    d.leading_byte_offset = static_cast<std::uint32_t>(o.lbo);
    d.stride_byte_offset = static_cast<std::uint32_t>(o.sbo);
    d.swizzle = o.swizzle128 ? SmemSwizzle::b128 : SmemSwizzle::none;
    u.operands.push_back({o.name, o.lbo, o.sbo, o.swizzle128, encode_tcgen05_smem_descriptor(d)});
  }
  int column = 0;
  for (const auto& [name, columns] : recipe.umma->tmem) {
    u.tmem.push_back({name, column, columns});
    column += columns;
  }
  if (column > s.tmem_columns) {
    throw ScheduleError(s.source, {{"/tmem_columns", fmt::format("the {} generator uses {} TMEM columns ({}), but the "
                                                                 "schedule declares {}",
                                                                 recipe.name, column,
                                                                 [&] {
                                                                   std::string list;
                                                                   for (const TmemRegion& r : u.tmem) {
                                                                     list += fmt::format("{}{} {}", list.empty() ? "" : ", ",
                                                                                         r.name, r.columns);
                                                                   }
                                                                   return list;
                                                                 }(),
                                                                 s.tmem_columns)}});
  }
  u.tmem_columns = tmem_allocation_columns(s.tmem_columns);
  u.proxy = v.target().tcgen05_proxy;
  u.tmem_image_bytes = u.proxy ? static_cast<std::int64_t>(v.target().tmem_lanes) * u.tmem_columns * 4 : 0;
  return u;
}

} // namespace kda
