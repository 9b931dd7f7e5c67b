#include "runtime/tensor_map_encoder.hpp"

#include "runtime/cuda_driver.hpp"

#include <fmt/format.h>

namespace kda::runtime {
namespace {

// The enumerators of compiler/encodings/tensor_map.hpp carry the driver's values.
static_assert(static_cast<int>(TmaDataType::bf16) == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
static_assert(static_cast<int>(TmaDataType::f32) == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
static_assert(static_cast<int>(TmaDataType::u6x16_align16b) == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B);
static_assert(static_cast<int>(TmaInterleave::b32) == CU_TENSOR_MAP_INTERLEAVE_32B);
static_assert(static_cast<int>(TmaSwizzle::b128) == CU_TENSOR_MAP_SWIZZLE_128B);
static_assert(static_cast<int>(TmaSwizzle::b128_atom64b) == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B);
static_assert(static_cast<int>(TmaL2Promotion::b256) == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
static_assert(static_cast<int>(TmaOobFill::nan_request_zero_fma) == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
static_assert(sizeof(CUtensorMap) == sizeof(EncodedTensorMap));

CUresult call_encoder(const TensorMapRequest& r, CUtensorMap& map) {
  return driver_api().cuTensorMapEncodeTiled(
      &map, static_cast<CUtensorMapDataType>(r.dtype), r.rank,
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.global_address)), r.global_dim.data(),
      r.global_strides.data(), r.box_dim.data(), r.element_strides.data(), static_cast<CUtensorMapInterleave>(r.interleave),
      static_cast<CUtensorMapSwizzle>(r.swizzle), static_cast<CUtensorMapL2promotion>(r.l2_promotion),
      static_cast<CUtensorMapFloatOOBfill>(r.oob_fill));
}

// The driver needs a 64-byte aligned map; cuda.h's type carries that (128
// bytes in CUDA 13's header) so a local of the type is aligned enough.
static_assert(alignof(CUtensorMap) >= 64);

} // namespace

EncodedTensorMap encode_tensor_map(const TensorMapRequest& request, const std::string& what) {
  require_valid_tensor_map(request, what);
  CUtensorMap map{};
  check_cu(call_encoder(request, map), "cuTensorMapEncodeTiled", what);
  EncodedTensorMap out{};
  static_assert(sizeof(map.opaque) == sizeof(out));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = map.opaque[i];
  }
  return out;
}

int driver_encode_result(const TensorMapRequest& request) {
  CUtensorMap map{};
  return static_cast<int>(call_encoder(request, map));
}

} // namespace kda::runtime
