/// \file
/// CUDA source → cubin with NVRTC, plus the log and the resource usage of each
/// entry point. No include paths are passed: kdajit's kernels include nothing
/// and rely on NVRTC's built-ins only. Thread-safe: `compile` may run on many
/// threads at once (NVRTC itself is thread-safe; each call owns its program).
#pragma once

#include "compiler/target.hpp"
#include "runtime/compiled_module.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace kda::runtime {

enum class CxxStandard { cxx17, cxx20 };

struct CompileRequest {
  std::string source;
  std::string label = "kdajit_kernel.cu"; ///< file name shown in the log, e.g. "kda_prefill_portable_c16.cu"
  Target target;
  CxxStandard standard = CxxStandard::cxx17;
  std::vector<std::string> extra_options; ///< appended after default_compile_options()
  std::vector<std::string> entry_points;  ///< extern "C" names that must be in the cubin
  bool want_ptx = false;
  /// Where a failing source (and a .log next to it) is written for repro;
  /// empty: default_failure_dir() (failed_source.hpp).
  std::filesystem::path failure_dir;
};

/// The exact, ordered options for `target` (they go into the cache key):
/// -arch=<target name>, -std=c++17|c++20, --ptxas-options=-v, -default-device.
std::vector<std::string> default_compile_options(const Target& target, CxxStandard standard = CxxStandard::cxx17);


class NvrtcCompiler {
public:
  /// Loads NVRTC now (NvrtcLibrary::get()); throws ToolchainError when it cannot.
  NvrtcCompiler();

  /// Compiles one translation unit for `request.target`. Throws ToolchainError
  /// (with the log, the options and the path of the written source) when NVRTC
  /// fails, produces no cubin, or a requested entry point is missing.
  CompiledModule compile(const CompileRequest& request) const;

  /// NVRTC makes objects it keeps for the life of the process during the
  /// first compile of the process, and registers their destructors with
  /// atexit then. A thread that compiles while the process exits needs an
  /// exit handler that joins it and runs before those destructors, so it must
  /// be registered after them: this compiles a one-line kernel for `target`
  /// unless a compile has returned in this process already (about 25 ms,
  /// once; its result does not matter).
  void create_process_state(const Target& target) const;

  NvrtcVersion version() const;
};

} // namespace kda::runtime
