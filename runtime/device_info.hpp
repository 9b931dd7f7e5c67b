/// \file
/// What kdajit needs to know about a GPU to choose a target and a schedule:
/// compute capability, SM count, opt-in SMEM per block. Read from the driver.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kda::runtime {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;                   ///< e.g. "NVIDIA H200" (a label: never a routing key)
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int max_smem_optin_per_block = 0;   ///< bytes, static + dynamic, after opt-in (232,448 on H200)
  int smem_per_sm = 0;                ///< bytes of shared memory one SM's blocks share (233,472 on H200)
  int reserved_smem_per_block = 0;    ///< bytes the driver reserves per resident block (1,024)
  int registers_per_sm = 0;           ///< 32-bit registers (65,536)
  int max_threads_per_sm = 0;         ///< 2,048
  std::uint64_t total_memory_bytes = 0;

  /// "NVIDIA H200 (device 0): CC 9.0, 132 SMs, 232,448 B SMEM per block, 139.8 GiB"
  std::string to_string() const;
};

/// The device with this ordinal. Throws ToolchainError when the driver is
/// unavailable or the ordinal is out of range.
DeviceInfo query_device(int ordinal);

/// Every device the driver reports; empty in compile-only mode.
std::vector<DeviceInfo> list_devices();

/// The device of the calling thread's current context (device 0's primary
/// context when none is current; see ensure_current_context()).
DeviceInfo current_device_info();

} // namespace kda::runtime
