#include "runtime/nvrtc_library.hpp"

#include "compiler/errors.hpp"
#include "runtime/cuda_driver.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <dlfcn.h>

#ifndef KDAJIT_CUDA_LIB_DIR
#define KDAJIT_CUDA_LIB_DIR ""
#endif

namespace kda::runtime {
namespace {

// The file `symbol` was loaded from, resolved through its links, and its size.
std::string library_file_identity(const void* symbol) {
  Dl_info info{};
  if (::dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) {
    return "unknown";
  }
  std::error_code error;
  const std::filesystem::path file = std::filesystem::canonical(info.dli_fname, error);
  if (error) {
    return info.dli_fname;
  }
  const std::uintmax_t size = std::filesystem::file_size(file, error);
  return error ? file.filename().string() : fmt::format("{}, {} bytes", file.filename().string(), size);
}

constexpr const char* k_override_variable = "KDAJIT_NVRTC_LIBRARY";

template <typename Fn>
void resolve(const DynamicLibrary& library, Fn& slot, const char* name) {
  slot = reinterpret_cast<Fn>(library.symbol(name));
  if (slot == nullptr) {
    throw ToolchainError(fmt::format("NVRTC library {} does not export {}", library.path(), name));
  }
}

struct AddedCandidates {
  std::mutex mutex;
  std::vector<std::string> paths;
  bool frozen = false; // set once get() has loaded
};

AddedCandidates& added_candidates() {
  static AddedCandidates k_added;
  return k_added;
}

} // namespace

std::optional<std::string> nvrtc_library_override() {
  const char* value = std::getenv(k_override_variable);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

std::vector<std::string> nvrtc_library_candidates() {
  if (std::optional<std::string> path = nvrtc_library_override()) {
    return {*path};
  }
  std::vector<std::string> out = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  {
    AddedCandidates& added = added_candidates();
    std::lock_guard lock(added.mutex);
    out.insert(out.end(), added.paths.begin(), added.paths.end());
  }
  const std::string toolkit_dir = KDAJIT_CUDA_LIB_DIR;
  if (!toolkit_dir.empty()) {
    out.push_back(toolkit_dir + "/libnvrtc.so.13");
  }
  return out;
}

bool add_nvrtc_library_candidate(const std::string& path) {
  AddedCandidates& added = added_candidates();
  std::lock_guard lock(added.mutex);
  if (added.frozen) {
    return false;
  }
  if (std::find(added.paths.begin(), added.paths.end(), path) == added.paths.end()) {
    added.paths.push_back(path);
  }
  return true;
}

std::optional<int> nvrtc_major_limit() {
  const DriverStatus& driver = driver_status();
  if (driver.driver_version < oldest_supported_driver()) { // none, or refused: kernels are only compiled
    return std::nullopt;
  }
  return driver.driver_version / 1000;
}

bool driver_loads_nvrtc_output(const std::string& nvrtc_version) {
  const std::optional<int> limit = nvrtc_major_limit();
  int major = 0;
  const auto [end, error] = std::from_chars(nvrtc_version.data(), nvrtc_version.data() + nvrtc_version.size(), major);
  if (!limit || error != std::errc() || end == nvrtc_version.data()) {
    return true;
  }
  return major <= *limit;
}

const NvrtcLibrary& NvrtcLibrary::get() {
  static const NvrtcLibrary k_library = [] {
    NvrtcLibrary library = load(nvrtc_library_candidates(), nvrtc_major_limit());
    AddedCandidates& added = added_candidates();
    std::lock_guard lock(added.mutex);
    added.frozen = true;
    return library;
  }();
  return k_library;
}

NvrtcLibrary NvrtcLibrary::load(const std::vector<std::string>& candidates, std::optional<int> max_major) {
  std::vector<std::string> refused;
  for (const std::string& candidate : candidates) {
    NvrtcLibrary out;
    out.m_library = DynamicLibrary::open_first({candidate});
    if (!out.m_library.is_open()) {
      refused.push_back(out.m_library.joined_errors());
      continue;
    }
    NvrtcApi& api = out.m_api;
    resolve(out.m_library, api.nvrtcVersion, "nvrtcVersion");
    resolve(out.m_library, api.nvrtcGetErrorString, "nvrtcGetErrorString");
    resolve(out.m_library, api.nvrtcCreateProgram, "nvrtcCreateProgram");
    resolve(out.m_library, api.nvrtcCompileProgram, "nvrtcCompileProgram");
    resolve(out.m_library, api.nvrtcDestroyProgram, "nvrtcDestroyProgram");
    resolve(out.m_library, api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
    resolve(out.m_library, api.nvrtcGetProgramLog, "nvrtcGetProgramLog");
    resolve(out.m_library, api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
    resolve(out.m_library, api.nvrtcGetCUBIN, "nvrtcGetCUBIN");
    resolve(out.m_library, api.nvrtcGetPTXSize, "nvrtcGetPTXSize");
    resolve(out.m_library, api.nvrtcGetPTX, "nvrtcGetPTX");
    if (const nvrtcResult r = api.nvrtcVersion(&out.m_version.major, &out.m_version.minor); r != NVRTC_SUCCESS) {
      throw ToolchainError(fmt::format("nvrtcVersion failed in {}: {}", out.path(), out.error_string(r)));
    }
    if (max_major && out.m_version.major > *max_major) {
      refused.push_back(fmt::format("{}: NVRTC {}.{} builds cubins the CUDA {} driver cannot load", out.path(),
                                    out.m_version.major, out.m_version.minor, *max_major));
      continue;
    }
    out.m_build = library_file_identity(reinterpret_cast<const void*>(api.nvrtcVersion));
    return out;
  }
  const bool overridden = nvrtc_library_override().has_value();
  std::string tried;
  for (const std::string& r : refused) {
    tried += (tried.empty() ? "" : "; ") + r;
  }
  throw ToolchainError(fmt::format("cannot load NVRTC{}: {}{}",
                                   max_major ? fmt::format(" {} or older", *max_major) : std::string(), tried,
                                   overridden ? fmt::format(" (path from {})", k_override_variable)
                                              : fmt::format(" (set {} to its path)", k_override_variable)));
}

std::string NvrtcLibrary::error_string(nvrtcResult result) const {
  const char* text = m_api.nvrtcGetErrorString != nullptr ? m_api.nvrtcGetErrorString(result) : nullptr;
  return text != nullptr ? std::string(text) : fmt::format("nvrtcResult {}", static_cast<int>(result));
}

} // namespace kda::runtime
