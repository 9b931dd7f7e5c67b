#include "kdajit/tensor_ref.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kda {

std::string to_string(ElementType type) {
  switch (type) {
  case ElementType::bf16:
    return "bf16";
  case ElementType::fp32:
    return "fp32";
  case ElementType::i32:
    return "int32";
  case ElementType::i64:
    return "int64";
  }
  return "?";
}

std::int64_t element_size(ElementType type) {
  return type == ElementType::bf16 ? 2 : type == ElementType::i64 ? 8 : 4;
}

std::int64_t TensorRef::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    n *= d;
  }
  return n;
}

std::vector<std::int64_t> TensorRef::contiguous_strides() const {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) {
    s[i - 1] = s[i] * shape[i];
  }
  return s;
}

std::vector<std::int64_t> TensorRef::effective_strides() const {
  return strides.empty() ? contiguous_strides() : strides;
}

std::int64_t TensorRef::stride(std::size_t dim) const {
  if (!strides.empty()) {
    return strides[dim];
  }
  std::int64_t s = 1;
  for (std::size_t i = dim + 1; i < shape.size(); ++i) {
    s *= shape[i];
  }
  return s;
}

// Row-major strides are the products of the later sizes; a dimension of size
// 1 may have any stride.
bool TensorRef::is_contiguous() const {
  if (strides.empty()) {
    return true;
  }
  if (strides.size() != shape.size()) {
    return false;
  }
  std::int64_t want = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] > 1 && strides[i] != want) {
      return false;
    }
    want *= shape[i];
  }
  return true;
}

std::uintptr_t TensorRef::begin_address() const {
  return reinterpret_cast<std::uintptr_t>(data);
}

std::uintptr_t TensorRef::end_address() const {
  const std::int64_t n = numel();
  if (n == 0) {
    return begin_address();
  }
  std::int64_t last = n - 1; // contiguous: the sum below with row-major strides
  if (!strides.empty()) {
    last = 0;
    for (std::size_t i = 0; i < shape.size() && i < strides.size(); ++i) {
      last += (shape[i] - 1) * strides[i];
    }
  }
  return begin_address() + static_cast<std::uintptr_t>((last + 1) * element_size(dtype));
}

TensorRef TensorRef::contiguous(const void* data, ElementType dtype, std::vector<std::int64_t> shape) {
  TensorRef t;
  t.data = data;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

} // namespace kda
