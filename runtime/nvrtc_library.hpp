/// \file
/// NVRTC, loaded with dlopen (kdajit never links libnvrtc). `NvrtcLibrary::get()`
/// loads it once per process and hands out the table of entry points kdajit
/// uses. nvrtc.h is included for its types only.
///
/// Search order: $KDAJIT_NVRTC_LIBRARY alone when set (an explicit choice is
/// never silently replaced), else "libnvrtc.so.13", "libnvrtc.so.12",
/// "libnvrtc.so" on the loader's search path, then the paths added with
/// add_nvrtc_library_candidate() (the Python package adds the
/// nvidia-cuda-nvrtc wheels'), then libnvrtc.so.13 in the toolkit's library
/// directory known at build time. The first that loads and whose major
/// version is not newer than the CUDA driver's wins: NVRTC 13 builds cubins
/// a CUDA 12 driver cannot load, so with a 12.x driver NVRTC 12 is taken
/// (without a driver, any NVRTC: kernels are only compiled).
#pragma once

#include "runtime/compiled_module.hpp"
#include "runtime/dynamic_library.hpp"

#include <nvrtc.h>

#include <optional>
#include <string>
#include <vector>

namespace kda::runtime {

/// The NVRTC entry points kdajit calls, resolved by dlsym.
struct NvrtcApi {
  decltype(&::nvrtcVersion) nvrtcVersion = nullptr;
  decltype(&::nvrtcGetErrorString) nvrtcGetErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) nvrtcCreateProgram = nullptr;
  decltype(&::nvrtcCompileProgram) nvrtcCompileProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) nvrtcDestroyProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) nvrtcGetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) nvrtcGetProgramLog = nullptr;
  decltype(&::nvrtcGetCUBINSize) nvrtcGetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) nvrtcGetCUBIN = nullptr;
  decltype(&::nvrtcGetPTXSize) nvrtcGetPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) nvrtcGetPTX = nullptr;
};

/// The environment override for the NVRTC library path (KDAJIT_NVRTC_LIBRARY);
/// the only place that variable is read.
std::optional<std::string> nvrtc_library_override();

/// The candidates `get()` tries, in order.
std::vector<std::string> nvrtc_library_candidates();

/// Appends a path to the candidates tried after the loader's search path;
/// false (and nothing added) once get() has loaded NVRTC.
bool add_nvrtc_library_candidate(const std::string& path);

/// The newest NVRTC major version the CUDA driver can load cubins of (its
/// own major), or nullopt without a supported driver (compile-only).
std::optional<int> nvrtc_major_limit();

/// Whether this process's driver can load cubins built by NVRTC
/// `nvrtc_version` ("13.0"; a cache or bundle entry's record): its major is
/// not newer than the driver's. True without a driver or a parsable version.
bool driver_loads_nvrtc_output(const std::string& nvrtc_version);

class NvrtcLibrary {
public:
  /// The process-wide library, loaded on first use (thread-safe). Throws
  /// ToolchainError naming every candidate tried when none loads; a later call
  /// tries again.
  static const NvrtcLibrary& get();

  /// Loads from an explicit candidate list (tests, `kdajit env`): the first
  /// that opens, exports every entry point and is not newer than
  /// `max_major`. Throws ToolchainError naming every candidate and why not.
  static NvrtcLibrary load(const std::vector<std::string>& candidates, std::optional<int> max_major = std::nullopt);

  const NvrtcApi& api() const { return m_api; }
  const std::string& path() const { return m_library.path(); }
  NvrtcVersion version() const { return m_version; }
  /// The loaded library file's resolved name and size ("libnvrtc.so.13.0.88,
  /// 118210104 bytes"): tells patch releases of one major.minor apart.
  const std::string& build() const { return m_build; }

  /// "NVRTC_ERROR_COMPILATION" etc.
  std::string error_string(nvrtcResult result) const;

private:
  DynamicLibrary m_library;
  NvrtcApi m_api;
  NvrtcVersion m_version;
  std::string m_build;
};

} // namespace kda::runtime
