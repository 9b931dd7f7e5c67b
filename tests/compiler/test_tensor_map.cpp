// TMA tensor-map arguments checked on the host against the documented
// constraints of cuTensorMapEncodeTiled (CUDA 13.0 cuda.h, "Tensor Map Object
// Managment"): one passing map, then each rule broken once, named in the message.
#include "compiler/encodings/tensor_map.hpp"
#include "compiler/errors.hpp"

#include <catch2/catch.hpp>
#include <fmt/ranges.h>

using namespace kda;
using Catch::Contains;

namespace {

// V of a [tokens][heads][128] bf16 tensor, 16 rows of one head per copy.
TensorMapRequest v_rows() {
  return token_rows_tensor_map(0x7f0000000000ull, TmaDataType::bf16, 8192, 96, 128, 16, TmaSwizzle::none);
}

std::string problems_of(const TensorMapRequest& r) {
  return fmt::format("{}", fmt::join(tensor_map_problems(r), "\n"));
}

} // namespace

TEST_CASE("tensor map: the token-rows map of a [T][H][128] bf16 tensor is valid", "[compiler][tensor_map]") {
  const TensorMapRequest r = v_rows();
  CHECK(r.rank == 3);
  CHECK(r.global_dim[0] == 128);
  CHECK(r.global_dim[1] == 96);
  CHECK(r.global_dim[2] == 8192);
  CHECK(r.global_strides[0] == 256);        // next head
  CHECK(r.global_strides[1] == 96 * 256);   // next token
  CHECK(r.box_dim[0] == 128);
  CHECK(r.box_dim[1] == 1);
  CHECK(r.box_dim[2] == 16);
  CHECK(tensor_map_problems(r).empty());
  CHECK_NOTHROW(require_valid_tensor_map(r, "v"));
  CHECK(tma_element_bytes(TmaDataType::bf16) == 2);
  CHECK(tma_element_bytes(TmaDataType::f64) == 8);
}

TEST_CASE("tensor map: every documented constraint is enforced", "[compiler][tensor_map]") {
  struct Case {
    const char* expected;
    void (*edit)(TensorMapRequest&);
  };
  const Case cases[] = {
      {"tensorRank = 0: must be in 1..5", [](TensorMapRequest& r) { r.rank = 0; }},
      {"tensorRank = 6: must be in 1..5", [](TensorMapRequest& r) { r.rank = 6; }},
      {"globalAddress 0x7f0000000008: must be 16-byte aligned", [](TensorMapRequest& r) { r.global_address += 8; }},
      {"globalAddress 0x7f0000000010: must be 32-byte aligned",
       [](TensorMapRequest& r) {
         r.global_address += 16;
         r.interleave = TmaInterleave::b32;
         r.swizzle = TmaSwizzle::b32;
       }},
      {"globalDim[2] = 0: must be in 1..2^32", [](TensorMapRequest& r) { r.global_dim[2] = 0; }},
      {"globalDim[2] = 4294967297: must be in 1..2^32", [](TensorMapRequest& r) { r.global_dim[2] = (1ull << 32) + 1; }},
      {"globalStrides[0] = 264: must be a multiple of 16 below 2^40", [](TensorMapRequest& r) { r.global_strides[0] = 264; }},
      {"globalStrides[1] = 1099511627776: must be a multiple of 16 below 2^40",
       [](TensorMapRequest& r) { r.global_strides[1] = 1ull << 40; }},
      {"globalStrides[0] = 128: smaller than globalDim[0] x 2 B = 256", [](TensorMapRequest& r) { r.global_strides[0] = 128; }},
      {"globalStrides[1] = 4096: smaller than globalStrides[0] x globalDim[1] = 24576",
       [](TensorMapRequest& r) { r.global_strides[1] = 4096; }},
      {"boxDim[2] = 257: must be in 1..256", [](TensorMapRequest& r) { r.box_dim[2] = 257; }},
      {"boxDim[1] = 0: must be in 1..256", [](TensorMapRequest& r) { r.box_dim[1] = 0; }},
      {"elementStrides[2] = 9: must be in 1..8", [](TensorMapRequest& r) { r.element_strides[2] = 9; }},
      {"boxDim[0] = 12: the inner box (24 B) must be a multiple of 16 B", [](TensorMapRequest& r) { r.box_dim[0] = 12; }},
      {"boxDim[0] = 128: the inner box (256 B) exceeds the 128 B swizzle span",
       [](TensorMapRequest& r) { r.swizzle = TmaSwizzle::b128; }},
      {"boxDim[0] = 64: the inner box (128 B) exceeds the 64 B swizzle span",
       [](TensorMapRequest& r) {
         r.box_dim[0] = 64;
         r.swizzle = TmaSwizzle::b64;
       }},
      {"swizzle: the 32 B interleave needs the 32 B swizzle",
       [](TensorMapRequest& r) {
         r.global_address += 16;
         r.interleave = TmaInterleave::b32;
       }},
      {"tensorRank = 2: an interleaved layout needs rank 3 or more",
       [](TensorMapRequest& r) {
         r.rank = 2;
         r.interleave = TmaInterleave::b16;
       }},
      {"oobFill: NaN fill needs a floating-point data type",
       [](TensorMapRequest& r) {
         r.dtype = TmaDataType::u16;
         r.oob_fill = TmaOobFill::nan_request_zero_fma;
       }},
      {"globalDim[0] = 128: must be a multiple of 128",
       [](TensorMapRequest& r) {
         r.dtype = TmaDataType::u6x16_align16b;
         r.global_dim[0] = 120;
       }},
  };
  for (const Case& c : cases) {
    TensorMapRequest r = v_rows();
    c.edit(r);
    INFO(c.expected);
    const std::string all = problems_of(r);
    if (std::string(c.expected).starts_with("globalDim[0] = 128")) {
      CHECK_THAT(all, Contains("globalDim[0] = 120: must be a multiple of 128"));
    } else {
      CHECK_THAT(all, Contains(c.expected));
    }
    CHECK_THROWS_AS(require_valid_tensor_map(r, "v"), InternalError);
  }
  // NaN fill is fine for a floating-point type
  TensorMapRequest nan_fill = v_rows();
  nan_fill.oob_fill = TmaOobFill::nan_request_zero_fma;
  CHECK(tensor_map_problems(nan_fill).empty());
}

TEST_CASE("tensor map: the fused kernels' swizzled 64-column boxes are valid", "[compiler][tensor_map]") {
  for (std::uint32_t rows : {16u, 32u}) {
    const TensorMapRequest r =
        swizzled_rows_tensor_map(0x7f0000001000ull, TmaDataType::bf16, 65536, 96, 128, 64, rows);
    INFO(rows);
    CHECK(tensor_map_problems(r).empty());
    CHECK(r.rank == 3);
    CHECK(r.swizzle == TmaSwizzle::b128);
    CHECK(r.box_dim[0] * 2 == 128); // the inner box spans exactly the 128-byte swizzle
    CHECK(r.box_dim[1] == 1);
    CHECK(r.box_dim[2] == rows);
    CHECK(r.global_strides[0] == 256);      // one head's row
    CHECK(r.global_strides[1] == 96 * 256); // one token
  }
  // a 128-column box would exceed the swizzle span
  TensorMapRequest wide = swizzled_rows_tensor_map(0x7f0000001000ull, TmaDataType::bf16, 100, 4, 128, 128, 32);
  CHECK_FALSE(tensor_map_problems(wide).empty());
}

TEST_CASE("tensor map: the checkpoint rows' stack of matrices in M-tile boxes is valid", "[compiler][tensor_map]") {
  // state_checkpoints [C, H, 128, 128] bf16: C·H matrices of 128 value rows
  for (std::uint32_t m_tile : {64u, 128u}) {
    const std::uint64_t matrices = 1000 * 96;
    const TensorMapRequest r =
        swizzled_matrix_stack_tensor_map(0x7f0000001000ull, TmaDataType::bf16, matrices, 128, 128, 64, m_tile);
    INFO(m_tile);
    CHECK(tensor_map_problems(r).empty());
    CHECK(r.rank == 3);
    CHECK(r.swizzle == TmaSwizzle::b128);
    CHECK(r.global_dim[0] == 128);
    CHECK(r.global_dim[1] == 128);
    CHECK(r.global_dim[2] == matrices);
    CHECK(r.global_strides[0] == 256);       // one value row of 128 keys
    CHECK(r.global_strides[1] == 128 * 256); // one matrix
    CHECK(r.box_dim[0] * 2 == 128);          // the inner box spans exactly the 128-byte swizzle
    CHECK(r.box_dim[1] == m_tile);
    CHECK(r.box_dim[2] == 1);
  }
  // an address the driver would refuse is caught on the host
  const TensorMapRequest odd = swizzled_matrix_stack_tensor_map(0x7f0000001008ull, TmaDataType::bf16, 4, 128, 128, 64, 128);
  CHECK_THAT(tensor_map_problems(odd).front(), Contains("globalAddress"));
}

TEST_CASE("tensor map: a call's state slots in M-tile boxes of one head's state are valid, pool pitch included",
          "[compiler][tensor_map]") {
  // initial_state [N, H, 128, 128] bf16, or a pool of slots `pitch` elements apart
  const std::uint64_t heads = 96;
  const std::uint64_t slot = heads * 128 * 128;
  for (std::uint64_t pitch : {slot, slot + 8, 2 * slot}) {
    INFO(pitch);
    const TensorMapRequest r =
        swizzled_state_slots_tensor_map(0x7f0000001000ull, TmaDataType::bf16, 4096, heads, 128, pitch, 64, 128);
    CHECK(tensor_map_problems(r).empty());
    CHECK(r.rank == 3);
    CHECK(r.swizzle == TmaSwizzle::b128);
    CHECK(r.global_dim[0] == 128);         // keys
    CHECK(r.global_dim[1] == heads * 128); // value rows of every head: box row h 128 + m0
    CHECK(r.global_dim[2] == 4096);        // slots
    CHECK(r.global_strides[0] == 256);     // one value row
    CHECK(r.global_strides[1] == pitch * 2);
    CHECK(r.box_dim[0] * 2 == 128); // the inner box spans exactly the 128-byte swizzle
    CHECK(r.box_dim[1] == 128);
    CHECK(r.box_dim[2] == 1);
  }
  // a pitch below one slot, or not a multiple of 16 bytes, is caught on the host
  const TensorMapRequest short_pitch =
      swizzled_state_slots_tensor_map(0x7f0000001000ull, TmaDataType::bf16, 8, heads, 128, slot - 64, 64, 128);
  CHECK_THAT(tensor_map_problems(short_pitch).front(), Contains("globalStrides[1]"));
  const TensorMapRequest odd_pitch =
      swizzled_state_slots_tensor_map(0x7f0000001000ull, TmaDataType::bf16, 8, heads, 128, slot + 4, 64, 128);
  CHECK_THAT(tensor_map_problems(odd_pitch).front(), Contains("globalStrides[1]"));
}
