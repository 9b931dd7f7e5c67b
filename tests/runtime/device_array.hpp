/// \file
/// A device allocation for the [gpu] tests: upload, download, poison.
#pragma once

#include "runtime/cuda_driver.hpp"

#include <cstdint>
#include <vector>

namespace kda::test {

class DeviceArray {
public:
  explicit DeviceArray(std::size_t bytes);
  DeviceArray(DeviceArray&& other) noexcept : m_ptr(other.m_ptr), m_bytes(other.m_bytes) { other.m_ptr = 0; }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray();

  template <typename T>
  static DeviceArray from(const std::vector<T>& host) {
    DeviceArray a(host.size() * sizeof(T));
    a.upload(host.data(), host.size() * sizeof(T));
    return a;
  }

  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  template <typename T>
  std::vector<T> download_as(std::size_t count) const {
    std::vector<T> out(count);
    download(out.data(), count * sizeof(T));
    return out;
  }
  /// Fills every byte with `value` (0xff makes bf16 and fp32 NaNs).
  void poison(std::uint8_t value = 0xff);
  void* data() const { return reinterpret_cast<void*>(m_ptr); }
  std::size_t bytes() const { return m_bytes; }

private:
  CUdeviceptr m_ptr = 0;
  std::size_t m_bytes = 0;
};

} // namespace kda::test
