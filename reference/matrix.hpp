/// \file
/// A small dense row-major fp64 matrix for the chunked algorithm's operands.
#pragma once

#include <cstdint>
#include <vector>

namespace kda::reference {

struct Matrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<double> values; // row-major, rows * cols

  Matrix() = default;
  Matrix(std::int64_t row_count, std::int64_t col_count, double fill = 0.0)
      : rows(row_count), cols(col_count), values(static_cast<std::size_t>(row_count * col_count), fill) {}

  double& operator()(std::int64_t i, std::int64_t j) { return values[static_cast<std::size_t>(i * cols + j)]; }
  double operator()(std::int64_t i, std::int64_t j) const { return values[static_cast<std::size_t>(i * cols + j)]; }

  static Matrix identity(std::int64_t n);
};

/// a * b (a.cols == b.rows).
Matrix multiply(const Matrix& a, const Matrix& b);
/// a * b^T (a.cols == b.cols).
Matrix multiply_transposed(const Matrix& a, const Matrix& b);
/// The largest |a - b| over all elements (same shape).
double max_abs_difference(const Matrix& a, const Matrix& b);

} // namespace kda::reference
