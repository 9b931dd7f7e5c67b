/// \file
/// Device results read back on the host by the [gpu] tests: one element of a
/// downloaded bf16 or fp32 buffer as a double, and spec section 8's relative
/// RMS error accumulated element by element (non-finite values counted, not
/// summed).
#pragma once

#include "compiler/bf16.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kda::test {

inline double element(const std::vector<std::uint8_t>& bytes, std::size_t index, bool fp32) {
  if (fp32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * index, 4);
    return f;
  }
  Bf16 b;
  std::memcpy(&b.bits, bytes.data() + 2 * index, 2);
  return bf16_to_float(b);
}

/// sqrt(sum (x - ref)^2 / sum ref^2) over the finite x added (the absolute
/// RMS when every ref is 0); `non_finite` counts the NaN and Inf x left out.
struct RelativeRms {
  double err2 = 0.0;
  double ref2 = 0.0;
  std::int64_t non_finite = 0;
  void add(double x, double ref) {
    if (!std::isfinite(x)) {
      ++non_finite;
      return;
    }
    err2 += (x - ref) * (x - ref);
    ref2 += ref * ref;
  }
  double rel() const { return ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2); }
};

} // namespace kda::test
