/// \file
/// The 32-bit instruction descriptor of tcgen05.mma .kind::f16 (sm_100a /
/// sm_100f / sm_103a) and TMEM addresses, encoded on the host (PTX ISA,
/// "Instruction descriptor format for .kind::f16 and .kind::tf32",
/// tcgen05-instruction-desc-kind-tf32-f16-f8f6f4; "Tensor Memory addressing"):
///   bits  0-1   sparsity selector (0: dense)
///   bit   2     sparsity flag (0: dense)
///   bit   3     saturate (integer kinds only; 0)
///   bits  4-5   D type: 0 f16, 1 f32
///   bits  7-9   A type: 0 f16, 1 bf16 (kind::f16)
///   bits 10-12  B type: 0 f16, 1 bf16
///   bit  13/14  negate A / B
///   bit  15/16  transpose A / B: 0 K-major, 1 M/N-major
///   bits 17-22  N >> 3
///   bits 24-28  M >> 4
///   bits 30-31  maximum shift (.ws only; 0)
/// A TMEM address holds the lane in bits 31-16 and the column in bits 15-0.
/// Compile-verified only: no Blackwell GPU runs these here.
#pragma once

#include <cstdint>

namespace kda {

enum class MmaElement { f16, bf16, f32 };
enum class MmaMajor { k, mn };

struct Tcgen05F16Instruction {
  MmaElement d = MmaElement::f32;
  MmaElement a = MmaElement::bf16;
  MmaElement b = MmaElement::bf16;
  MmaMajor a_major = MmaMajor::k;
  MmaMajor b_major = MmaMajor::k;
  bool negate_a = false;
  bool negate_b = false;
  int m = 128; ///< 64 or 128 (cta_group::1), 256 (cta_group::2)
  int n = 256;

  bool operator==(const Tcgen05F16Instruction&) const = default;
};

/// Encodes the descriptor. Throws InternalError for a shape or type the
/// instruction does not have: M not 64/128/256; N not a multiple of 8 in
/// [8, 256] for M = 64 or of 16 in [16, 256] otherwise; A/B not f16/bf16 or
/// different from each other; D not f16/f32.
std::uint32_t encode_tcgen05_f16_instruction(const Tcgen05F16Instruction& instruction);
Tcgen05F16Instruction decode_tcgen05_f16_instruction(std::uint32_t descriptor);

/// TMEM address of (lane, column): lane in bits 31-16, column in bits 15-0.
/// Throws InternalError past 128 lanes or 512 columns.
std::uint32_t tmem_address(std::uint32_t lane, std::uint32_t column);

} // namespace kda
