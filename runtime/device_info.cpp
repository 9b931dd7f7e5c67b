#include "runtime/device_info.hpp"

#include "compiler/schedule_checks.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"

#include <fmt/format.h>

#include <array>

namespace kda::runtime {
namespace {

int attribute(CUdevice device, CUdevice_attribute which, const char* what) {
  int value = 0;
  check_cu(driver_api().cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute",
           fmt::format("reading {} of device {}", what, static_cast<int>(device)));
  return value;
}

} // namespace

std::string DeviceInfo::to_string() const {
  return fmt::format("{} (device {}): CC {}.{}, {} SMs, {} B SMEM per block, {:.1f} GiB", name, ordinal, cc_major,
                     cc_minor, sm_count, with_thousands(max_smem_optin_per_block),
                     static_cast<double>(total_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
}

DeviceInfo query_device(int ordinal) {
  driver_api(); // throws, with the reason, in compile-only mode
  const int count = driver_status().device_count;
  if (ordinal < 0 || ordinal >= count) {
    throw ToolchainError(fmt::format("device {} does not exist ({} device{})", ordinal, count, count == 1 ? "" : "s"));
  }
  CUdevice device = 0;
  check_cu(driver_api().cuDeviceGet(&device, ordinal), "cuDeviceGet", fmt::format("device {}", ordinal));

  DeviceInfo info;
  info.ordinal = ordinal;
  std::array<char, 256> name{};
  KDA_CU(cuDeviceGetName, name.data(), static_cast<int>(name.size()), device);
  info.name = name.data();
  info.cc_major = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "the compute capability");
  info.cc_minor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "the compute capability");
  info.sm_count = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "the SM count");
  info.max_smem_optin_per_block =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "the opt-in SMEM per block");
  info.smem_per_sm =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "the SMEM per SM");
  info.reserved_smem_per_block =
      attribute(device, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, "the reserved SMEM per block");
  info.registers_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "the registers per SM");
  info.max_threads_per_sm =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "the threads per SM");
  std::size_t bytes = 0;
  KDA_CU(cuDeviceTotalMem, &bytes, device);
  info.total_memory_bytes = bytes;
  return info;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  if (!driver_status().available) {
    return out;
  }
  for (int i = 0; i < driver_status().device_count; ++i) {
    out.push_back(query_device(i));
  }
  return out;
}

DeviceInfo current_device_info() {
  const CUdevice device = current_device();
  // CUdevice is a handle; find the ordinal it belongs to rather than assume.
  for (int i = 0; i < driver_status().device_count; ++i) {
    CUdevice candidate = 0;
    KDA_CU(cuDeviceGet, &candidate, i);
    if (candidate == device) {
      return query_device(i);
    }
  }
  throw ToolchainError(fmt::format("the current context's device (handle {}) matches no device ordinal",
                                   static_cast<int>(device)));
}

} // namespace kda::runtime
