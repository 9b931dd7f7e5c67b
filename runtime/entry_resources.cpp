#include "runtime/entry_resources.hpp"

#include <fmt/format.h>

namespace kda::runtime {

std::variant<ResourceUsage, std::string> entry_resources(const std::string& entry, const CubinResources* cubin,
                                                         const ResourceUsage* log) {
  if (cubin == nullptr) {
    return fmt::format("the cubin records no resources (.nv.info register count) for entry point {}", entry);
  }
  if (cubin->stack_frame_bytes > 0 && log == nullptr) {
    return fmt::format("entry point {} has a {}-byte stack frame but the ptxas log does not list it, so its spills "
                       "are unknown",
                       entry, cubin->stack_frame_bytes);
  }
  ResourceUsage usage = log != nullptr ? *log : ResourceUsage{};
  usage.registers = cubin->registers;
  usage.stack_frame_bytes = cubin->stack_frame_bytes;
  return usage;
}

} // namespace kda::runtime
