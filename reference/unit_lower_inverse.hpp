/// \file
/// T = (I + L)^-1 for a strictly lower triangular L (spec 2.2), three ways.
/// Entries of L on and above the diagonal are never read.
#pragma once

#include "reference/matrix.hpp"

namespace kda::reference {

enum class InverseScheme {
  forward_substitution, // row by row; any n
  neumann,              // (I - L)(I + L^2)(I + L^4)... (FlashKDA, C = 16); n a power of two
  blocked,              // diagonal blocks (8 x 8 by default, the Cake N32 plan) by forward substitution,
                        // merged by doubling (8 -> 16 -> 32); n = block * 2^m
};

Matrix invert_unit_lower_forward(const Matrix& l);
Matrix invert_unit_lower_neumann(const Matrix& l);
/// Off-diagonal blocks of each merge: -D^-1 * C * A^-1 for [[A, 0], [C, D]];
/// diagonal blocks of `block` rows by forward substitution. With
/// `bf16_merge_operands`, each merge is X = C A^-1, then -D^-1 X with A^-1, C,
/// D^-1 and X rounded to bf16 as operands (a kernel that merges with bf16
/// mma.sync, e.g. the fused tcgen05 designs).
Matrix invert_unit_lower_blocked(const Matrix& l, std::int64_t block = 8, bool bf16_merge_operands = false);
Matrix invert_unit_lower(const Matrix& l, InverseScheme scheme, std::int64_t block = 8,
                         bool bf16_merge_operands = false);

} // namespace kda::reference
