/// \file
/// What one NVRTC compile produces: the cubin and everything that describes
/// it (log, options, toolchain version, per-entry resource usage). Pure C++:
/// the cache stores and reloads this without CUDA headers.
#pragma once

#include "runtime/ptxas_log.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kda::runtime {

struct NvrtcVersion {
  int major = 0;
  int minor = 0;
  friend bool operator==(const NvrtcVersion&, const NvrtcVersion&) = default;
};

struct CompiledModule {
  std::vector<std::uint8_t> cubin;
  std::optional<std::string> ptx;   ///< only when the request asked for it
  std::string log;                  ///< the full NVRTC program log (ptxas -v lines included)
  std::vector<std::string> options; ///< exactly as passed to NVRTC, in order
  std::string target_name;          ///< e.g. "sm_100f" (a and f cubins differ in two bytes only)
  NvrtcVersion nvrtc_version;
  double compile_ms = 0.0;          ///< wall time of nvrtcCreateProgram..nvrtcCompileProgram
  std::map<std::string, ResourceUsage> resources; ///< per entry point, from the ptxas log
};

} // namespace kda::runtime
