/// \file
/// A tensor as the public API receives it: a device pointer with dtype, shape
/// and strides in elements (architecture.md, "API conventions").
#pragma once

#include "kdajit/export.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kda {

enum class ElementType { bf16, fp32, i32, i64 };

KDA_API std::string to_string(ElementType type);
KDA_API std::int64_t element_size(ElementType type);

struct KDA_API TensorRef {
  const void* data = nullptr; ///< device pointer; nullptr = not given
  ElementType dtype = ElementType::bf16;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides; ///< elements; empty = contiguous

  bool defined() const { return data != nullptr; }
  std::int64_t numel() const;
  /// Row-major strides of `shape`.
  std::vector<std::int64_t> contiguous_strides() const;
  /// The strides in use (given, or contiguous when none were given).
  std::vector<std::int64_t> effective_strides() const;
  /// effective_strides()[dim] without building the vector (dim < rank).
  std::int64_t stride(std::size_t dim) const;
  bool is_contiguous() const;
  /// Byte range [begin, end) the tensor can touch.
  std::uintptr_t begin_address() const;
  std::uintptr_t end_address() const;

  static TensorRef contiguous(const void* data, ElementType dtype, std::vector<std::int64_t> shape);
};

/// These run on every call's dispatch path: none allocates unless it returns
/// a vector.

/// "[2, 8192, 96, 128]".
KDA_API std::string shape_string(const std::vector<std::int64_t>& shape);

} // namespace kda
