#include "runtime/nvjitlink_library.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#ifndef KDAJIT_CUDA_LIB_DIR
#define KDAJIT_CUDA_LIB_DIR ""
#endif

namespace kda::runtime {
namespace {

template <typename Fn>
bool resolve(const DynamicLibrary& library, Fn& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<Fn>(library.symbol(name));
  if (slot == nullptr) {
    missing = name;
    return false;
  }
  return true;
}

} // namespace

std::vector<std::string> nvjitlink_library_candidates() {
  std::vector<std::string> out = {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"};
  const std::string toolkit_dir = KDAJIT_CUDA_LIB_DIR;
  if (!toolkit_dir.empty()) {
    out.push_back(toolkit_dir + "/libnvJitLink.so.13");
  }
  return out;
}

const NvJitLinkLibrary& NvJitLinkLibrary::get() {
  static const NvJitLinkLibrary k_library = load(nvjitlink_library_candidates());
  return k_library;
}

NvJitLinkLibrary NvJitLinkLibrary::load(const std::vector<std::string>& candidates) {
  std::vector<std::string> refused;
  for (const std::string& candidate : candidates) {
    NvJitLinkLibrary out;
    out.m_library = DynamicLibrary::open_first({candidate});
    if (!out.m_library.is_open()) {
      refused.push_back(out.m_library.joined_errors());
      continue;
    }
    NvJitLinkApi& api = out.m_api;
    std::string missing;
    const bool complete = resolve(out.m_library, api.create, "nvJitLinkCreate", missing) &&
                          resolve(out.m_library, api.destroy, "nvJitLinkDestroy", missing) &&
                          resolve(out.m_library, api.add_data, "nvJitLinkAddData", missing) &&
                          resolve(out.m_library, api.complete, "nvJitLinkComplete", missing) &&
                          resolve(out.m_library, api.cubin_size, "nvJitLinkGetLinkedCubinSize", missing) &&
                          resolve(out.m_library, api.cubin, "nvJitLinkGetLinkedCubin", missing) &&
                          resolve(out.m_library, api.error_log_size, "nvJitLinkGetErrorLogSize", missing) &&
                          resolve(out.m_library, api.error_log, "nvJitLinkGetErrorLog", missing) &&
                          resolve(out.m_library, api.info_log_size, "nvJitLinkGetInfoLogSize", missing) &&
                          resolve(out.m_library, api.info_log, "nvJitLinkGetInfoLog", missing) &&
                          resolve(out.m_library, api.version, "nvJitLinkVersion", missing);
    if (!complete) {
      refused.push_back(fmt::format("{}: does not export {}", out.m_library.path(), missing));
      continue;
    }
    unsigned int major = 0;
    unsigned int minor = 0;
    if (api.version(&major, &minor) != NVJITLINK_SUCCESS) {
      refused.push_back(fmt::format("{}: nvJitLinkVersion failed", out.m_library.path()));
      continue;
    }
    out.m_version = fmt::format("{}.{}", major, minor);
    return out;
  }
  throw ToolchainError(fmt::format("nvJitLink could not be loaded (it turns PTX into cubins for kernels that NVRTC "
                                   "does not build); tried: {}",
                                   fmt::join(refused, "; ")));
}

} // namespace kda::runtime
