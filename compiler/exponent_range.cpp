#include "compiler/exponent_range.hpp"

#include <cmath>

namespace kda {

double effective_exponent_rows(int chunk_size, ExponentAnchor anchor) {
  return anchor == ExponentAnchor::lower_bound ? chunk_size / 2.0 : static_cast<double>(chunk_size);
}

double operand_exponent(double lower_bound, int chunk_size, ExponentAnchor anchor) {
  return effective_exponent_rows(chunk_size, anchor) * std::fabs(lower_bound) * k_log2e;
}

double safe_lower_bound_magnitude(int chunk_size, ExponentAnchor anchor) {
  return k_max_operand_exponent / (effective_exponent_rows(chunk_size, anchor) * k_log2e);
}

bool lower_bound_is_safe(double lower_bound, int chunk_size, ExponentAnchor anchor) {
  return std::isfinite(lower_bound) && lower_bound < 0.0 &&
         operand_exponent(lower_bound, chunk_size, anchor) < k_max_operand_exponent;
}

} // namespace kda
