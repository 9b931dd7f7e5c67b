#include "reference/rounding.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace kda::reference {

const std::vector<std::string>& RoundingPoints::known_points() {
  static const std::vector<std::string> k_points = {"beta", "kd_anchored", "qd_anchored", "ki",  "lmat",
                                                    "inverse_merge", "mqk", "tinv", "kd", "qd", "kr",
                                                    "state_snapshot", "prediction", "delta", "u", "upd",
                                                    "output"};
  return k_points;
}

RoundingPoints RoundingPoints::from_names(const std::vector<std::string>& names) {
  RoundingPoints r;
  for (const std::string& name : names) {
    const auto& known = known_points();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InternalError(fmt::format("no emulation for the bf16 rounding point '{}'", name));
    }
    r.bf16.insert(name);
  }
  return r;
}

double round_to_fp32(double x) {
  return static_cast<double>(static_cast<float>(x));
}

double round_to_bf16(double x) {
  const float f = static_cast<float>(x);
  if (!std::isfinite(f)) {
    return f;
  }
  std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even on the upper 16 bits
  bits &= 0xffff0000u;
  return static_cast<double>(std::bit_cast<float>(bits));
}

void round_to_bf16(Matrix& m) {
  for (double& x : m.values) {
    x = round_to_bf16(x);
  }
}

void round_to_fp32(Matrix& m) {
  for (double& x : m.values) {
    x = round_to_fp32(x);
  }
}

} // namespace kda::reference
