/// \file
/// The BF16 exponent-range rule of spec section 8, decision 3: with chunk size
/// C, an unanchored schedule's operands reach 2^(C |lb| log2 e) and an anchored
/// one (anchor (C/2) b, b = lb log2 e) reaches 2^((C/2) |lb| log2 e). A schedule
/// is safe for lower_bound lb iff that exponent stays below 126 (the
/// approximate-reciprocal cliff, comfortably inside bf16's 2^127).
#pragma once

#include "compiler/schedule_enums.hpp"

namespace kda {

inline constexpr double k_log2e = 1.4426950408889634;
inline constexpr double k_max_operand_exponent = 126.0;

/// Rows over which one operand's exponent grows: C unanchored, C/2 anchored.
double effective_exponent_rows(int chunk_size, ExponentAnchor anchor);

/// Largest operand exponent (log2) a lower_bound produces.
double operand_exponent(double lower_bound, int chunk_size, ExponentAnchor anchor);

/// The bound L such that lower_bound is safe iff |lower_bound| < L
/// (5.4585 for C = 16 unanchored and for C = 32 anchored).
double safe_lower_bound_magnitude(int chunk_size, ExponentAnchor anchor);

/// True when lower_bound is finite, negative and inside the safe range.
bool lower_bound_is_safe(double lower_bound, int chunk_size, ExponentAnchor anchor);

} // namespace kda
