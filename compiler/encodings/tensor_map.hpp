/// \file
/// TMA tensor maps (sm_90 and later) as plain data: the arguments of the
/// driver's cuTensorMapEncodeTiled, checked on the host against the
/// constraints its documentation lists (CUDA 13.0 cuda.h, "Tensor Map Object
/// Managment", cuTensorMapEncodeTiled) before the runtime passes them to the
/// driver. The enumerators carry the driver's values (the runtime asserts that
/// they match cuda.h); dimension 0 is the innermost (contiguous) one.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kda {

enum class TmaDataType : std::uint32_t {
  u8 = 0, u16, u32, i32, u64, i64, f16, f32, f64, bf16, f32_ftz, tf32, tf32_ftz,
  u4x16_align8b, u4x16_align16b, u6x16_align16b
};
enum class TmaInterleave : std::uint32_t { none = 0, b16, b32 };
enum class TmaSwizzle : std::uint32_t { none = 0, b32, b64, b128, b128_atom32b, b128_atom32b_flip8b, b128_atom64b };
enum class TmaL2Promotion : std::uint32_t { none = 0, b64, b128, b256 };
enum class TmaOobFill : std::uint32_t { none = 0, nan_request_zero_fma };

struct TensorMapRequest {
  TmaDataType dtype = TmaDataType::bf16;
  std::uint32_t rank = 1;
  std::uint64_t global_address = 0;
  std::array<std::uint64_t, 5> global_dim{};     ///< elements per dimension, innermost first
  std::array<std::uint64_t, 4> global_strides{}; ///< bytes, of dimensions 1 .. rank - 1
  std::array<std::uint32_t, 5> box_dim{};        ///< elements per dimension of one copy
  std::array<std::uint32_t, 5> element_strides{1, 1, 1, 1, 1};
  TmaInterleave interleave = TmaInterleave::none;
  TmaSwizzle swizzle = TmaSwizzle::none;
  TmaL2Promotion l2_promotion = TmaL2Promotion::none;
  TmaOobFill oob_fill = TmaOobFill::none;
};

/// Bytes of one element (0 for the packed 4- and 6-bit types).
std::uint32_t tma_element_bytes(TmaDataType dtype);

/// Every documented constraint `request` violates, each naming its parameter
/// ("boxDim[0] = 300: must be in 1..256"); empty when the driver must accept it.
std::vector<std::string> tensor_map_problems(const TensorMapRequest& request);

/// Throws InternalError listing the problems (a tensor map is built by kdajit,
/// never by the caller, so a bad one is kdajit's bug).
void require_valid_tensor_map(const TensorMapRequest& request, const std::string& what);

/// The rows of one head of a [tokens][heads][head_dim] tensor, `box_rows` rows
/// per copy: rank 3 (head_dim, heads, tokens), box (head_dim, 1, box_rows).
/// Rows past the last token read as zeros (TMA fills out-of-bound elements).
TensorMapRequest token_rows_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t tokens,
                                       std::uint64_t heads, std::uint32_t head_dim, std::uint32_t box_rows,
                                       TmaSwizzle swizzle);

/// The same rows in boxes of `box_cols` columns with the 128-byte swizzle (the
/// fused tcgen05 kernels' operand tiles): rank 3 (head_dim, heads, tokens), box
/// (box_cols, 1, box_rows) with box_cols x element bytes = 128; a tile of
/// head_dim columns takes head_dim / box_cols copies (column offsets 0,
/// box_cols, ...), each landing as box_rows rows of 128 B, 16-byte chunk j of
/// row r at chunk j ^ (r mod 8) (PTX ISA, "Tensor copy ... swizzling modes").
TensorMapRequest swizzled_rows_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t tokens,
                                          std::uint64_t heads, std::uint32_t head_dim, std::uint32_t box_cols,
                                          std::uint32_t box_rows);

/// A stack of `matrices` contiguous [rows][cols] matrices (the checkpoint
/// rows: C·H states of [128][128] bf16), stored in boxes of `box_cols` columns
/// x `box_rows` rows of one matrix with the 128-byte swizzle: rank 3 (cols,
/// rows, matrices), box (box_cols, box_rows, 1) with box_cols x element bytes
/// = 128, the SMEM image laid out as for swizzled_rows_tensor_map.
TensorMapRequest swizzled_matrix_stack_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t matrices,
                                                  std::uint32_t rows, std::uint32_t cols, std::uint32_t box_cols,
                                                  std::uint32_t box_rows);

/// The recurrent states of a call in their slots (a [slots][heads][head_dim]
/// [head_dim] state tensor, or a pool whose slots lie `slot_stride` elements
/// apart, a multiple of 16 bytes at least heads x head_dim x head_dim), in
/// boxes of `box_cols` keys x `box_rows` value rows of one head's state with
/// the 128-byte swizzle: rank 3 (keys, heads x value rows, slots), box
/// (box_cols, box_rows, 1), the box at (key k, value row h head_dim + m,
/// slot s); the SMEM image laid out as for swizzled_rows_tensor_map.
TensorMapRequest swizzled_state_slots_tensor_map(std::uint64_t address, TmaDataType dtype, std::uint64_t slots,
                                                 std::uint64_t heads, std::uint32_t head_dim, std::uint64_t slot_stride,
                                                 std::uint32_t box_cols, std::uint32_t box_rows);

} // namespace kda
