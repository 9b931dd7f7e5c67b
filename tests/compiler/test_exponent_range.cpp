#include "compiler/exponent_range.hpp"

#include <catch2/catch.hpp>

using namespace kda;

TEST_CASE("safe lower_bound range follows spec decision 3", "[compiler][numerics]") {
  // |lb| < 126 / (C_eff log2 e): C_eff = C unanchored, C/2 anchored.
  CHECK(safe_lower_bound_magnitude(16, ExponentAnchor::none) == Approx(5.4585).epsilon(1e-4));
  CHECK(safe_lower_bound_magnitude(32, ExponentAnchor::lower_bound) == Approx(5.4585).epsilon(1e-4));
  CHECK(safe_lower_bound_magnitude(32, ExponentAnchor::none) == Approx(2.72925).epsilon(1e-4));
  CHECK(safe_lower_bound_magnitude(64, ExponentAnchor::lower_bound) == Approx(2.72925).epsilon(1e-4));
  CHECK(lower_bound_is_safe(-5.0, 32, ExponentAnchor::lower_bound));
  CHECK(lower_bound_is_safe(-5.45, 16, ExponentAnchor::none));
  CHECK_FALSE(lower_bound_is_safe(-5.46, 16, ExponentAnchor::none));
  CHECK_FALSE(lower_bound_is_safe(-5.0, 32, ExponentAnchor::none));
  CHECK_FALSE(lower_bound_is_safe(0.0, 16, ExponentAnchor::none));
  CHECK_FALSE(lower_bound_is_safe(0.5, 16, ExponentAnchor::none));
  CHECK_FALSE(lower_bound_is_safe(-std::numeric_limits<double>::infinity(), 16, ExponentAnchor::none));
  CHECK_FALSE(lower_bound_is_safe(std::nan(""), 16, ExponentAnchor::none));
  // lb = -5: 16 |b| = 115.4 (seed note 000).
  CHECK(operand_exponent(-5.0, 32, ExponentAnchor::lower_bound) == Approx(115.42).epsilon(1e-3));
}
