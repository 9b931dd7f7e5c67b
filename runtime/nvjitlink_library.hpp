/// \file
/// nvJitLink, loaded with dlopen like NVRTC (kdajit never links it): the
/// toolkit's linker and PTX assembler as a library, which turns the PTX of a
/// code generator that does not go through NVRTC (the LLVM tier) into a
/// cubin. nvJitLink.h is included for its types only; the entry points are
/// the unversioned names every nvJitLink 12.x and 13.x exports.
///
/// Search order: "libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"
/// on the loader's search path, then libnvJitLink.so.13 in the toolkit's
/// library directory known at build time.
#pragma once

#include "runtime/dynamic_library.hpp"

#include <nvJitLink.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kda::runtime {

/// The nvJitLink entry points kdajit calls, resolved by dlsym.
struct NvJitLinkApi {
  nvJitLinkResult (*create)(nvJitLinkHandle*, std::uint32_t, const char**) = nullptr;
  nvJitLinkResult (*destroy)(nvJitLinkHandle*) = nullptr;
  nvJitLinkResult (*add_data)(nvJitLinkHandle, nvJitLinkInputType, const void*, std::size_t, const char*) = nullptr;
  nvJitLinkResult (*complete)(nvJitLinkHandle) = nullptr;
  nvJitLinkResult (*cubin_size)(nvJitLinkHandle, std::size_t*) = nullptr;
  nvJitLinkResult (*cubin)(nvJitLinkHandle, void*) = nullptr;
  nvJitLinkResult (*error_log_size)(nvJitLinkHandle, std::size_t*) = nullptr;
  nvJitLinkResult (*error_log)(nvJitLinkHandle, char*) = nullptr;
  nvJitLinkResult (*info_log_size)(nvJitLinkHandle, std::size_t*) = nullptr;
  nvJitLinkResult (*info_log)(nvJitLinkHandle, char*) = nullptr;
  nvJitLinkResult (*version)(unsigned int*, unsigned int*) = nullptr;
};

/// The candidates NvJitLinkLibrary::get() tries, in order.
std::vector<std::string> nvjitlink_library_candidates();

class NvJitLinkLibrary {
public:
  /// The process-wide library, loaded on first use (thread-safe). Throws
  /// ToolchainError naming every candidate tried when none loads.
  static const NvJitLinkLibrary& get();

  /// Loads the first candidate that opens and exports every entry point;
  /// ToolchainError naming each candidate and why not otherwise.
  static NvJitLinkLibrary load(const std::vector<std::string>& candidates);

  const NvJitLinkApi& api() const { return m_api; }
  const std::string& path() const { return m_library.path(); }
  /// "13.0"
  const std::string& version() const { return m_version; }

private:
  DynamicLibrary m_library;
  NvJitLinkApi m_api;
  std::string m_version;
};

} // namespace kda::runtime
