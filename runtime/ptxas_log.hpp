/// \file
/// Registers, shared memory, stack and spills of each kernel, read from the
/// `--ptxas-options=-v` lines NVRTC puts into the program log. Works without a
/// GPU. The format (ptxas 13.0; older releases differ only in which items the
/// "Used" line lists):
///
///     ptxas info    : Compiling entry function 'spill' for 'sm_90a'
///     ptxas info    : Function properties for spill
///     ptxas         .     5104 bytes stack frame, 5880 bytes spill stores, 7064 bytes spill loads
///     ptxas info    : Used 64 registers, used 0 barriers, 5104 bytes cumulative stack size
///     ptxas info    : Used 10 registers, used 1 barriers, 16 bytes smem, 360 bytes cmem[0]
///
/// "Function properties" also appears for non-inlined device functions, which
/// have no "Compiling entry function" line and are not reported. ptxas's wgmma
/// performance notes name their function last, in quotes:
///
///     ptxas info    : (C7517) warpgroup.wait is injected in around line 5013 by compiler to allow use of
///                     registers defined by GMMA in function 'k'
///     ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due
///                     to insufficient register resources for the wgmma pipeline in the function 'k'
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace kda::runtime {

struct ResourceUsage {
  int registers = 0;
  int static_smem_bytes = 0; ///< "N bytes smem"; absent from the log when 0
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int barriers = 0;
  /// "(C7511)/(C7518)... wgmma.mma_async instructions are serialized ..."
  /// for this function: every wgmma waits for the previous one.
  bool wgmma_serialized = false;
  /// "(C7517) warpgroup.wait is injected ...": ptxas added a wait the source
  /// does not have, to read registers an in-flight wgmma defines.
  bool wgmma_wait_injected = false;
  friend bool operator==(const ResourceUsage&, const ResourceUsage&) = default;
};

/// Entry-point name (as ptxas prints it: the extern "C" name, or the mangled
/// one) → its usage. Lines that are not ptxas resource lines are ignored.
std::map<std::string, ResourceUsage> parse_ptxas_resource_log(std::string_view log);

} // namespace kda::runtime
