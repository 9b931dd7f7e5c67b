/// \file
/// What a cubin (an ELF64 file) says about its kernels, independent of the
/// ptxas log's wording: its function symbols (which kernels a compile really
/// produced) and each kernel's registers and stack from its `.nv.info`
/// attributes. (Its `.nv.shared.<kernel>` section is 1 KiB for a kernel
/// whose SMEM is all dynamic, where ptxas reports 0 bytes, so static SMEM is
/// still taken from ptxas.)
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kda::runtime {

/// Names of the STT_FUNC symbols of `cubin`; empty when it is not a readable ELF64 file.
std::set<std::string> cubin_function_names(const std::vector<std::uint8_t>& cubin);

/// One kernel's resources as its cubin records them.
struct CubinResources {
  int registers = 0;          ///< EIATTR_REGCOUNT
  int stack_frame_bytes = 0;  ///< EIATTR_FRAME_SIZE (where spills go)
  int min_stack_bytes = 0;    ///< EIATTR_MIN_STACK_SIZE
};

/// Kernel name -> its resources, for every kernel with a register count in
/// the cubin's `.nv.info`; empty when it is not a readable ELF64 file.
std::map<std::string, CubinResources> cubin_resources(const std::vector<std::uint8_t>& cubin);

} // namespace kda::runtime
