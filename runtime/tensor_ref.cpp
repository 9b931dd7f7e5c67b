#include "runtime/tensor_ref.hpp"

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

bool TensorRef::is_contiguous() const {
  const std::vector<std::int64_t> want = contiguous_strides();
  const std::vector<std::int64_t> have = effective_strides();
  if (have.size() != want.size()) {
    return false;
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (shape[i] > 1 && have[i] != want[i]) {
      return false;
    }
  }
  return true;
}

std::uintptr_t TensorRef::begin_address() const {
  return reinterpret_cast<std::uintptr_t>(data);
}

std::uintptr_t TensorRef::end_address() const {
  if (numel() == 0) {
    return begin_address();
  }
  std::int64_t last = 0;
  const std::vector<std::int64_t> s = effective_strides();
  for (std::size_t i = 0; i < shape.size() && i < s.size(); ++i) {
    last += (shape[i] - 1) * s[i];
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
