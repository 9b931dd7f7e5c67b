#include "runtime/entry_resources.hpp"

#include <fmt/format.h>

namespace kda::runtime {

std::variant<ResourceUsage, std::string> entry_resources(const std::string& entry, const CubinResources* cubin,
                                                         const ResourceUsage* log) {
  if (cubin == nullptr) {
    return fmt::format("the cubin records no resources (.nv.info register count) for entry point {}", entry);
  }
  if (cubin->static_smem_bytes < 0) {
    return fmt::format("the cubin's .nv.shared.{} section is smaller than the {}-byte system reserve it should hold",
                       entry, k_reserved_smem_per_block);
  }
  if (cubin->stack_frame_bytes > 0 && log == nullptr) {
    return fmt::format("entry point {} has a {}-byte stack frame but the ptxas log does not list it, so its spills "
                       "are unknown (NVRTC answers a compile from its own cache without ptxas lines; "
                       "CUDA_CACHE_DISABLE=1 turns that cache off)",
                       entry, cubin->stack_frame_bytes);
  }
  if (log != nullptr && log->static_smem_bytes != cubin->static_smem_bytes) {
    return fmt::format("entry point {}: the cubin records {} bytes of static SMEM, ptxas {}", entry,
                       cubin->static_smem_bytes, log->static_smem_bytes);
  }
  ResourceUsage usage = log != nullptr ? *log : ResourceUsage{};
  usage.registers = cubin->registers;
  usage.stack_frame_bytes = cubin->stack_frame_bytes;
  usage.static_smem_bytes = cubin->static_smem_bytes;
  return usage;
}

std::variant<ResourceUsage, std::string> entry_resources(const std::string& entry,
                                                         const std::map<std::string, CubinResources>& recorded,
                                                         const std::map<std::string, ResourceUsage>& logged) {
  const auto in_cubin = recorded.find(entry);
  const auto in_log = logged.find(entry);
  return entry_resources(entry, in_cubin != recorded.end() ? &in_cubin->second : nullptr,
                         in_log != logged.end() ? &in_log->second : nullptr);
}

} // namespace kda::runtime
