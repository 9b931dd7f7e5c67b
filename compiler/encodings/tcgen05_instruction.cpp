#include "compiler/encodings/tcgen05_instruction.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {
namespace {

std::uint32_t ab_code(MmaElement e, const char* which) {
  switch (e) {
  case MmaElement::f16:
    return 0;
  case MmaElement::bf16:
    return 1;
  case MmaElement::f32:
    break;
  }
  throw InternalError(fmt::format("tcgen05 kind::f16: operand {} must be f16 or bf16", which));
}

} // namespace

std::uint32_t encode_tcgen05_f16_instruction(const Tcgen05F16Instruction& ins) {
  if (ins.m != 64 && ins.m != 128 && ins.m != 256) {
    throw InternalError(fmt::format("tcgen05 kind::f16: M = {} is not 64, 128 or 256", ins.m));
  }
  const int step = ins.m == 64 ? 8 : 16;
  if (ins.n < step || ins.n > 256 || ins.n % step != 0) {
    throw InternalError(fmt::format("tcgen05 kind::f16: N = {} for M = {} must be a multiple of {} in [{}, 256]", ins.n,
                                    ins.m, step, step));
  }
  if (ins.a != ins.b) {
    throw InternalError("tcgen05 kind::f16: A and B must have the same type");
  }
  if (ins.d == MmaElement::bf16) {
    throw InternalError("tcgen05 kind::f16: D must be f16 or f32");
  }
  std::uint32_t d = 0;
  d |= (ins.d == MmaElement::f32 ? 1u : 0u) << 4;
  d |= ab_code(ins.a, "A") << 7;
  d |= ab_code(ins.b, "B") << 10;
  d |= static_cast<std::uint32_t>(ins.negate_a) << 13;
  d |= static_cast<std::uint32_t>(ins.negate_b) << 14;
  d |= static_cast<std::uint32_t>(ins.a_major == MmaMajor::mn) << 15;
  d |= static_cast<std::uint32_t>(ins.b_major == MmaMajor::mn) << 16;
  d |= static_cast<std::uint32_t>(ins.n >> 3) << 17;
  d |= static_cast<std::uint32_t>(ins.m >> 4) << 24;
  return d;
}

Tcgen05F16Instruction decode_tcgen05_f16_instruction(std::uint32_t d) {
  Tcgen05F16Instruction ins;
  ins.d = ((d >> 4) & 0x3u) == 1 ? MmaElement::f32 : MmaElement::f16;
  ins.a = ((d >> 7) & 0x7u) == 1 ? MmaElement::bf16 : MmaElement::f16;
  ins.b = ((d >> 10) & 0x7u) == 1 ? MmaElement::bf16 : MmaElement::f16;
  ins.negate_a = ((d >> 13) & 1u) != 0;
  ins.negate_b = ((d >> 14) & 1u) != 0;
  ins.a_major = ((d >> 15) & 1u) != 0 ? MmaMajor::mn : MmaMajor::k;
  ins.b_major = ((d >> 16) & 1u) != 0 ? MmaMajor::mn : MmaMajor::k;
  ins.n = static_cast<int>((d >> 17) & 0x3fu) << 3;
  ins.m = static_cast<int>((d >> 24) & 0x1fu) << 4;
  return ins;
}

std::uint32_t tmem_address(std::uint32_t lane, std::uint32_t column) {
  if (lane >= 128 || column >= 512) {
    throw InternalError(fmt::format("TMEM address: lane {} / column {} outside 128 lanes x 512 columns", lane, column));
  }
  return (lane << 16) | column;
}

} // namespace kda
