/// \file
/// Generated CUDA source of one module (all entry points of one plan).
#pragma once

#include <string>
#include <vector>

namespace kda {

struct CudaSource {
  std::string file_name;                 ///< e.g. kda_prefill_portable_c16.sm_90.d128.in_bf16.state_fp32.fixed.cu
  std::string text;
  std::vector<std::string> entry_points; ///< extern "C" names, in launch order
};

} // namespace kda
