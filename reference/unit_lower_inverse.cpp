#include "reference/unit_lower_inverse.hpp"

#include "compiler/errors.hpp"
#include "reference/rounding.hpp"

namespace kda::reference {
namespace {


bool is_power_of_two(std::int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

Matrix strict_lower(const Matrix& l) {
  Matrix out(l.rows, l.cols);
  for (std::int64_t i = 0; i < l.rows; ++i) {
    for (std::int64_t j = 0; j < i; ++j) {
      out(i, j) = l(i, j);
    }
  }
  return out;
}

// Forward substitution on the diagonal block [offset, offset + n) of L.
Matrix forward_block(const Matrix& l, std::int64_t offset, std::int64_t n) {
  Matrix t = Matrix::identity(n);
  for (std::int64_t i = 1; i < n; ++i) {
    for (std::int64_t j = 0; j < i; ++j) {
      double sum = 0.0;
      for (std::int64_t m = j; m < i; ++m) {
        sum += l(offset + i, offset + m) * t(m, j);
      }
      t(i, j) = -sum;
    }
  }
  return t;
}

Matrix bf16_copy(Matrix m) {
  round_to_bf16(m);
  return m;
}

// Inverse of the diagonal block [offset, offset + n) of I + L, n = 8 * 2^m.
Matrix blocked_block(const Matrix& l, std::int64_t offset, std::int64_t n, std::int64_t base, bool bf16_operands) {
  if (n == base) {
    return forward_block(l, offset, n);
  }
  const std::int64_t half = n / 2;
  const Matrix a_inv = blocked_block(l, offset, half, base, bf16_operands);
  const Matrix d_inv = blocked_block(l, offset + half, half, base, bf16_operands);
  Matrix c(half, half);
  for (std::int64_t i = 0; i < half; ++i) {
    for (std::int64_t j = 0; j < half; ++j) {
      c(i, j) = l(offset + half + i, offset + j);
    }
  }
  const Matrix off_diagonal =
      bf16_operands ? multiply(bf16_copy(d_inv), bf16_copy(multiply(bf16_copy(c), bf16_copy(a_inv))))
                    : multiply(multiply(d_inv, c), a_inv);
  Matrix t(n, n);
  for (std::int64_t i = 0; i < half; ++i) {
    for (std::int64_t j = 0; j < half; ++j) {
      t(i, j) = a_inv(i, j);
      t(half + i, half + j) = d_inv(i, j);
      t(half + i, j) = -off_diagonal(i, j);
    }
  }
  return t;
}

} // namespace

Matrix invert_unit_lower_forward(const Matrix& l) {
  KDA_INTERNAL_ASSERT(l.rows == l.cols, "inverse of a non-square matrix");
  return forward_block(l, 0, l.rows);
}

Matrix invert_unit_lower_neumann(const Matrix& l) {
  KDA_INTERNAL_ASSERT(l.rows == l.cols && is_power_of_two(l.rows), "neumann inverse needs a power-of-two size");
  const std::int64_t n = l.rows;
  Matrix power = strict_lower(l); // L^(2^m)
  Matrix t = Matrix::identity(n);
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    t.values[i] -= power.values[i]; // I - L
  }
  for (std::int64_t exponent = 1; exponent * 2 < n; exponent *= 2) {
    power = multiply(power, power);
    const Matrix product = multiply(t, power);
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      t.values[i] += product.values[i]; // t * (I + L^(2 exponent))
    }
  }
  return t;
}

Matrix invert_unit_lower_blocked(const Matrix& l, std::int64_t block, bool bf16_merge_operands) {
  KDA_INTERNAL_ASSERT(block > 0 && l.rows == l.cols && l.rows % block == 0 && is_power_of_two(l.rows / block),
                      "blocked inverse needs a size of block * 2^m");
  return blocked_block(l, 0, l.rows, block, bf16_merge_operands);
}

Matrix invert_unit_lower(const Matrix& l, InverseScheme scheme, std::int64_t block, bool bf16_merge_operands) {
  switch (scheme) {
  case InverseScheme::forward_substitution:
    return invert_unit_lower_forward(l);
  case InverseScheme::neumann:
    return invert_unit_lower_neumann(l);
  case InverseScheme::blocked:
    return invert_unit_lower_blocked(l, block, bf16_merge_operands);
  }
  KDA_INTERNAL_ASSERT(false, "unknown inverse scheme");
  return {};
}

} // namespace kda::reference
