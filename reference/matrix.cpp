#include "reference/matrix.hpp"

#include "compiler/errors.hpp"

#include <algorithm>
#include <cmath>

namespace kda::reference {

Matrix Matrix::identity(std::int64_t n) {
  Matrix out(n, n);
  for (std::int64_t i = 0; i < n; ++i) {
    out(i, i) = 1.0;
  }
  return out;
}

Matrix multiply(const Matrix& a, const Matrix& b) {
  KDA_INTERNAL_ASSERT(a.cols == b.rows, "multiply: inner dimensions differ");
  Matrix out(a.rows, b.cols);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int64_t m = 0; m < a.cols; ++m) {
      const double factor = a(i, m);
      for (std::int64_t j = 0; j < b.cols; ++j) {
        out(i, j) += factor * b(m, j);
      }
    }
  }
  return out;
}

Matrix multiply_transposed(const Matrix& a, const Matrix& b) {
  KDA_INTERNAL_ASSERT(a.cols == b.cols, "multiply_transposed: inner dimensions differ");
  Matrix out(a.rows, b.rows);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int64_t j = 0; j < b.rows; ++j) {
      double sum = 0.0;
      for (std::int64_t m = 0; m < a.cols; ++m) {
        sum += a(i, m) * b(j, m);
      }
      out(i, j) = sum;
    }
  }
  return out;
}

double max_abs_difference(const Matrix& a, const Matrix& b) {
  KDA_INTERNAL_ASSERT(a.rows == b.rows && a.cols == b.cols, "max_abs_difference: shapes differ");
  double worst = 0.0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    worst = std::max(worst, std::abs(a.values[i] - b.values[i]));
  }
  return worst;
}

} // namespace kda::reference
