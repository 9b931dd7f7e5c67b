/// \file
/// Host-side bfloat16: storage as raw bits, conversion with round-to-nearest-even
/// (the rounding of __float2bfloat16_rn), NaN kept quiet.
#pragma once

#include <bit>
#include <cstdint>

namespace kda {

struct Bf16 {
  std::uint16_t bits = 0;
};

inline float bf16_to_float(Bf16 value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value.bits) << 16);
}

inline Bf16 float_to_bf16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return Bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)}; // quiet NaN
  }
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return Bf16{static_cast<std::uint16_t>((u + rounding) >> 16)};
}

/// Rounds a double to the nearest bf16 value (through fp32, as a kernel would store it).
inline double round_to_bf16(double value) {
  return static_cast<double>(bf16_to_float(float_to_bf16(static_cast<float>(value))));
}

} // namespace kda
