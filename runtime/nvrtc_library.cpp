#include "runtime/nvrtc_library.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <cstdlib>

#ifndef KDAJIT_CUDA_LIB_DIR
#define KDAJIT_CUDA_LIB_DIR ""
#endif

namespace kda::runtime {
namespace {

constexpr const char* k_override_variable = "KDAJIT_NVRTC_LIBRARY";

template <typename Fn>
void resolve(const DynamicLibrary& library, Fn& slot, const char* name) {
  slot = reinterpret_cast<Fn>(library.symbol(name));
  if (slot == nullptr) {
    throw ToolchainError(fmt::format("NVRTC library {} does not export {}", library.path(), name));
  }
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
  std::vector<std::string> out = {"libnvrtc.so.13", "libnvrtc.so"};
  const std::string toolkit_dir = KDAJIT_CUDA_LIB_DIR;
  if (!toolkit_dir.empty()) {
    out.push_back(toolkit_dir + "/libnvrtc.so.13");
  }
  return out;
}

const NvrtcLibrary& NvrtcLibrary::get() {
  static const NvrtcLibrary k_library = load(nvrtc_library_candidates());
  return k_library;
}

NvrtcLibrary NvrtcLibrary::load(const std::vector<std::string>& candidates) {
  NvrtcLibrary out;
  out.m_library = DynamicLibrary::open_first(candidates);
  if (!out.m_library.is_open()) {
    const bool overridden = nvrtc_library_override().has_value();
    throw ToolchainError(fmt::format("cannot load NVRTC: {}{}", out.m_library.joined_errors(),
                                     overridden ? fmt::format(" (path from {})", k_override_variable)
                                                : fmt::format(" (set {} to its path)", k_override_variable)));
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
  return out;
}

std::string NvrtcLibrary::error_string(nvrtcResult result) const {
  const char* text = m_api.nvrtcGetErrorString != nullptr ? m_api.nvrtcGetErrorString(result) : nullptr;
  return text != nullptr ? std::string(text) : fmt::format("nvrtcResult {}", static_cast<int>(result));
}

} // namespace kda::runtime
