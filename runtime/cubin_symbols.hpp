/// \file
/// What a cubin (an ELF64 file) says about its kernels, independent of the
/// ptxas log's wording: its function symbols (which kernels a compile really
/// produced) and each kernel's registers and stack from its `.nv.info`
/// attributes, and its static SMEM from the size of its `.nv.shared.<kernel>`
/// section. From sm_90 on, a cubin with a `.nv.shared.reserved.*` section
/// places the block's system-reserved SMEM (1 KiB, the driver's
/// CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK) at the start of every
/// kernel's `.nv.shared.<kernel>` section; it is not part of the kernel's
/// static SMEM as ptxas and the driver's function attributes count it, so it
/// is subtracted.
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
  /// size of `.nv.shared.<kernel>` less the system reserve; -1 when that
  /// section is smaller than the reserve the cubin says it holds
  int static_smem_bytes = 0;
};

/// The block's system-reserved SMEM a cubin with `.nv.shared.reserved.*`
/// sections counts into every kernel's `.nv.shared.<kernel>` section.
inline constexpr int k_reserved_smem_per_block = 1024;

/// Whether a cubin's `.nv.shared.<kernel>` sections count the system reserve.
enum class SmemReserve {
  as_sections_say, ///< when it has `.nv.shared.reserved.*` sections (NVRTC's and ptxas's cubins)
  counted,         ///< always: nvJitLink's linked cubins for sm_90 and later, which drop those sections
};

/// Kernel name -> its resources, for every kernel with a register count in
/// the cubin's `.nv.info`; empty when it is not a readable ELF64 file.
std::map<std::string, CubinResources> cubin_resources(const std::vector<std::uint8_t>& cubin,
                                                      SmemReserve reserve = SmemReserve::as_sections_say);

} // namespace kda::runtime
