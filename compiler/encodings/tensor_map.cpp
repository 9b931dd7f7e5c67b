#include "compiler/encodings/tensor_map.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

namespace kda {
namespace {

constexpr std::uint64_t k_max_global_dim = std::uint64_t{1} << 32;
constexpr std::uint64_t k_stride_limit = std::uint64_t{1} << 40;

bool packed_16b(TmaDataType t) {
  return t == TmaDataType::u4x16_align16b || t == TmaDataType::u6x16_align16b;
}

bool is_float(TmaDataType t) {
  switch (t) {
  case TmaDataType::f16:
  case TmaDataType::f32:
  case TmaDataType::f64:
  case TmaDataType::bf16:
  case TmaDataType::f32_ftz:
  case TmaDataType::tf32:
  case TmaDataType::tf32_ftz:
    return true;
  default:
    return false;
  }
}

std::uint32_t swizzle_span(TmaSwizzle s) {
  switch (s) {
  case TmaSwizzle::none:
    return 0;
  case TmaSwizzle::b32:
    return 32;
  case TmaSwizzle::b64:
    return 64;
  default:
    return 128;
  }
}

} // namespace

std::uint32_t tma_element_bytes(TmaDataType dtype) {
  switch (dtype) {
  case TmaDataType::u8:
    return 1;
  case TmaDataType::u16:
  case TmaDataType::f16:
  case TmaDataType::bf16:
    return 2;
  case TmaDataType::u32:
  case TmaDataType::i32:
  case TmaDataType::f32:
  case TmaDataType::f32_ftz:
  case TmaDataType::tf32:
  case TmaDataType::tf32_ftz:
    return 4;
  case TmaDataType::u64:
  case TmaDataType::i64:
  case TmaDataType::f64:
    return 8;
  default:
    return 0;
  }
}

std::vector<std::string> tensor_map_problems(const TensorMapRequest& r) {
  std::vector<std::string> p;
  const std::uint32_t bytes = tma_element_bytes(r.dtype);
  if (static_cast<std::uint32_t>(r.dtype) > static_cast<std::uint32_t>(TmaDataType::u6x16_align16b)) {
    p.push_back(fmt::format("tensorDataType {}: not a CUtensorMapDataType", static_cast<std::uint32_t>(r.dtype)));
  }
  if (r.rank < 1 || r.rank > 5) {
    p.push_back(fmt::format("tensorRank = {}: must be in 1..5", r.rank));
    return p;
  }
  if (r.interleave != TmaInterleave::none && r.rank < 3) {
    p.push_back(fmt::format("tensorRank = {}: an interleaved layout needs rank 3 or more", r.rank));
  }
  const std::uint64_t address_alignment = r.interleave == TmaInterleave::b32 || packed_16b(r.dtype) ? 32 : 16;
  if (r.global_address % address_alignment != 0) {
    p.push_back(fmt::format("globalAddress {:#x}: must be {}-byte aligned", r.global_address, address_alignment));
  }
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    if (r.global_dim[i] == 0 || r.global_dim[i] > k_max_global_dim) {
      p.push_back(fmt::format("globalDim[{}] = {}: must be in 1..2^32", i, r.global_dim[i]));
    }
  }
  if (packed_16b(r.dtype) && r.global_dim[0] % 128 != 0) {
    p.push_back(fmt::format("globalDim[0] = {}: must be a multiple of 128 for 16-byte-aligned packed types",
                            r.global_dim[0]));
  }
  if (r.dtype == TmaDataType::u4x16_align8b && r.global_dim[0] % 2 != 0) {
    p.push_back(fmt::format("globalDim[0] = {}: must be even for 16U4_ALIGN8B", r.global_dim[0]));
  }
  const std::uint64_t stride_multiple = r.interleave == TmaInterleave::b32 || packed_16b(r.dtype) ? 32 : 16;
  for (std::uint32_t i = 0; i + 1 < r.rank; ++i) {
    const std::uint64_t s = r.global_strides[i];
    if (s % stride_multiple != 0 || s >= k_stride_limit) {
      p.push_back(fmt::format("globalStrides[{}] = {}: must be a multiple of {} below 2^40", i, s, stride_multiple));
    }
  }
  // Each stride covers the dimension below it (no overlapping rows).
  if (bytes > 0 && r.rank > 1 && r.global_strides[0] < r.global_dim[0] * bytes) {
    p.push_back(fmt::format("globalStrides[0] = {}: smaller than globalDim[0] x {} B = {}", r.global_strides[0], bytes,
                            r.global_dim[0] * bytes));
  }
  for (std::uint32_t i = 1; i + 1 < r.rank; ++i) {
    if (r.global_strides[i] < r.global_strides[i - 1] * r.global_dim[i]) {
      p.push_back(fmt::format("globalStrides[{}] = {}: smaller than globalStrides[{}] x globalDim[{}] = {}", i,
                              r.global_strides[i], i - 1, i, r.global_strides[i - 1] * r.global_dim[i]));
    }
  }
  for (std::uint32_t i = 0; i < r.rank; ++i) {
    if (r.box_dim[i] == 0 || r.box_dim[i] > 256) {
      p.push_back(fmt::format("boxDim[{}] = {}: must be in 1..256", i, r.box_dim[i]));
    }
    if (r.element_strides[i] == 0 || r.element_strides[i] > 8) {
      p.push_back(fmt::format("elementStrides[{}] = {}: must be in 1..8", i, r.element_strides[i]));
    }
  }
  const std::uint64_t inner_bytes = static_cast<std::uint64_t>(r.box_dim[0]) * bytes;
  if (r.interleave == TmaInterleave::none && bytes > 0 && inner_bytes % 16 != 0) {
    p.push_back(fmt::format("boxDim[0] = {}: the inner box ({} B) must be a multiple of 16 B", r.box_dim[0],
                            inner_bytes));
  }
  if (packed_16b(r.dtype) && r.box_dim[0] != 128) {
    p.push_back(fmt::format("boxDim[0] = {}: must be 128 for 16-byte-aligned packed types", r.box_dim[0]));
  }
  if (r.interleave == TmaInterleave::none && r.swizzle != TmaSwizzle::none && bytes > 0 &&
      inner_bytes > swizzle_span(r.swizzle)) {
    p.push_back(fmt::format("boxDim[0] = {}: the inner box ({} B) exceeds the {} B swizzle span", r.box_dim[0],
                            inner_bytes, swizzle_span(r.swizzle)));
  }
  if (r.interleave == TmaInterleave::b32 && r.swizzle != TmaSwizzle::b32) {
    p.push_back("swizzle: the 32 B interleave needs the 32 B swizzle");
  }
  if (r.dtype == TmaDataType::u6x16_align16b && r.interleave != TmaInterleave::none) {
    p.push_back("interleave: 16U6_ALIGN16B needs no interleave");
  }
  if (static_cast<std::uint32_t>(r.swizzle) > static_cast<std::uint32_t>(TmaSwizzle::b128_atom64b)) {
    p.push_back(fmt::format("swizzle {}: not a CUtensorMapSwizzle", static_cast<std::uint32_t>(r.swizzle)));
  }
  if (r.oob_fill == TmaOobFill::nan_request_zero_fma && !is_float(r.dtype)) {
    p.push_back("oobFill: NaN fill needs a floating-point data type");
  }
  return p;
}

void require_valid_tensor_map(const TensorMapRequest& request, const std::string& what) {
  const std::vector<std::string> problems = tensor_map_problems(request);
  if (!problems.empty()) {
    throw InternalError(fmt::format("tensor map for {}: {}", what, fmt::join(problems, "; ")));
  }
}

namespace {

// A rank-3 map of a dense tensor [d2][d1][d0] (d0 innermost, no padding).
TensorMapRequest dense_rank3_tensor_map(std::uint64_t address, TmaDataType dtype,
                                        const std::array<std::uint64_t, 3>& dims,
                                        const std::array<std::uint32_t, 3>& box, TmaSwizzle swizzle) {
  TensorMapRequest r;
  r.dtype = dtype;
  r.rank = 3;
  r.global_address = address;
  const std::uint64_t bytes = tma_element_bytes(dtype);
  r.global_dim = {dims[0], dims[1], dims[2], 0, 0};
  r.global_strides = {dims[0] * bytes, dims[1] * dims[0] * bytes, 0, 0};
  r.box_dim = {box[0], box[1], box[2], 0, 0};
  r.swizzle = swizzle;
  return r;
}

} // namespace

TensorMapRequest token_rows_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t tokens,
                                       std::uint64_t heads, std::uint32_t head_dim, std::uint32_t box_rows,
                                       TmaSwizzle swizzle) {
  return dense_rank3_tensor_map(address, dtype, {head_dim, heads, tokens}, {head_dim, 1, box_rows}, swizzle);
}

TensorMapRequest swizzled_rows_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t tokens,
                                          std::uint64_t heads, std::uint32_t head_dim, std::uint32_t box_cols,
                                          std::uint32_t box_rows) {
  TensorMapRequest r = token_rows_tensor_map(address, dtype, tokens, heads, head_dim, box_rows, TmaSwizzle::b128);
  r.box_dim[0] = box_cols;
  return r;
}

TensorMapRequest swizzled_matrix_stack_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t matrices,
                                                  std::uint32_t rows, std::uint32_t cols, std::uint32_t box_cols,
                                                  std::uint32_t box_rows) {
  return dense_rank3_tensor_map(address, dtype, {cols, rows, matrices}, {box_cols, box_rows, 1}, TmaSwizzle::b128);
}

TensorMapRequest swizzled_state_slots_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t slots,
                                                 std::uint64_t heads, std::uint32_t head_dim, std::uint64_t slot_stride,
                                                 std::uint32_t box_cols, std::uint32_t box_rows) {
  TensorMapRequest r =
      dense_rank3_tensor_map(address, dtype, {head_dim, heads * head_dim, slots}, {box_cols, box_rows, 1}, TmaSwizzle::b128);
  r.global_strides[1] = slot_stride * tma_element_bytes(dtype);
  return r;
}

} // namespace kda
