#include "device_array.hpp"

#include "runtime/context.hpp"

namespace kda::test {

DeviceArray::DeviceArray(std::size_t bytes) : m_bytes(bytes) {
  runtime::ensure_current_context();
  KDA_CU(cuMemAlloc, &m_ptr, bytes == 0 ? 16 : bytes);
}

DeviceArray::~DeviceArray() {
  if (m_ptr != 0) {
    runtime::driver_api().cuMemFree(m_ptr);
  }
}

void DeviceArray::upload(const void* host, std::size_t bytes) {
  if (bytes > 0) {
    KDA_CU(cuMemcpyHtoD, m_ptr, host, bytes);
  }
}

void DeviceArray::download(void* host, std::size_t bytes) const {
  if (bytes > 0) {
    KDA_CU(cuCtxSynchronize);
    KDA_CU(cuMemcpyDtoH, host, m_ptr, bytes);
  }
}

void DeviceArray::poison(std::uint8_t value) {
  KDA_CU(cuMemsetD8Async, m_ptr, value, m_bytes == 0 ? 16 : m_bytes, nullptr);
  KDA_CU(cuCtxSynchronize);
}

} // namespace kda::test
