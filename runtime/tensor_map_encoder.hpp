/// \file
/// TMA tensor maps through the driver: a TensorMapRequest (compiler/encodings/
/// tensor_map.hpp), checked on the host first, encoded by cuTensorMapEncodeTiled
/// into the 128-byte opaque map a kernel takes as a __grid_constant__ argument.
#pragma once

#include "compiler/encodings/tensor_map.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace kda::runtime {

/// The driver's CUtensorMap bytes (16 x 64 bit, to be copied 64-byte aligned).
using EncodedTensorMap = std::array<std::uint64_t, 16>;

/// Throws InternalError when the request breaks a documented constraint
/// (before calling the driver) and DriverError when the driver refuses it.
EncodedTensorMap encode_tensor_map(const TensorMapRequest& request, const std::string& what);

/// The driver's verdict alone, without the host check (for tests comparing the
/// two): CUDA_SUCCESS or the CUresult it returned.
int driver_encode_result(const TensorMapRequest& request);

} // namespace kda::runtime
