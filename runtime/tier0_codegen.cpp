#include "runtime/tier0_codegen.hpp"

#include "compiler/errors.hpp"
#include "runtime/dynamic_library.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

// Weak: defined where LLVM is linked in (libkdajit.so itself, or the
// sanitizer build's tests, which link compiler/ir); null elsewhere.
extern "C" [[gnu::weak]] const kda::tier0::Api* kda_internal_tier0_api_v1(const char** generator_id);

namespace kda::runtime {
namespace {

using ApiEntry = const tier0::Api* (*)(const char**);

struct Tier0Source {
  const tier0::Api* api = nullptr;
  std::string why_not; ///< when api is null
};

// libkdajit.so of this build, beside the running binary: the build tree's
// package/ (or its install prefix, build/prefix/, which a GPU machine may be
// given alone) or an install prefix's library directory, else the loader's path.
std::vector<std::string> library_candidates() {
  std::vector<std::string> out;
  if (const char* path = std::getenv("KDAJIT_LIBRARY"); path != nullptr && *path != '\0') {
    out.emplace_back(path);
  }
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path up = self.parent_path().parent_path();
    out.push_back((up / "package" / "libkdajit.so.0").string());
    out.push_back((up / "prefix" / KDAJIT_INSTALL_LIBDIR / "libkdajit.so.0").string());
    out.push_back((up / KDAJIT_INSTALL_LIBDIR / "libkdajit.so.0").string());
  }
  out.emplace_back("libkdajit.so.0");
  return out;
}

Tier0Source find_tier0() {
  ApiEntry entry = &kda_internal_tier0_api_v1 != nullptr ? &kda_internal_tier0_api_v1 : nullptr;
  std::string where = "this binary";
  static DynamicLibrary library; // kept open for the process
  if (entry == nullptr) {
    library = DynamicLibrary::open_first(library_candidates());
    if (!library.is_open()) {
      return {nullptr, fmt::format("this binary has no LLVM tier and found no libkdajit.so to take it from ({})",
                                   library.joined_errors())};
    }
    entry = reinterpret_cast<ApiEntry>(library.symbol("kda_internal_tier0_api_v1"));
    where = library.path();
    if (entry == nullptr) {
      return {nullptr, fmt::format("{} has no LLVM tier (built without KDAJIT_LLVM_TIER)", where)};
    }
  }
  const char* build = nullptr;
  const tier0::Api* api = entry(&build);
  if (api == nullptr || api->version != 1 || build == nullptr || std::string(build) != KDAJIT_TIER0_BUILD_ID) {
    return {nullptr, fmt::format("{} is another kdajit build (LLVM tier {}; this binary is {})", where,
                                 build != nullptr ? build : "unknown", KDAJIT_TIER0_BUILD_ID)};
  }
  return {api, ""};
}

const Tier0Source& tier0_source() {
  static const Tier0Source k_source = find_tier0();
  return k_source;
}

const tier0::Api& require_tier0() {
  const Tier0Source& s = tier0_source();
  if (s.api == nullptr) {
    throw ToolchainError(fmt::format("the LLVM tier (the 'token' family's kernels) is not available: {}. It is "
                                     "built into libkdajit.so with -DKDAJIT_LLVM_TIER=ON (needs llvm-19-dev)",
                                     s.why_not));
  }
  return *s.api;
}

} // namespace

bool tier0_available() {
  return tier0_source().api != nullptr;
}

tier0::Tier0Ir tier0_ir(const KernelPlan& plan) {
  return require_tier0().ir_text(plan);
}

tier0::Tier0Ptx tier0_ptx(const KernelPlan& plan) {
  return require_tier0().ptx(plan);
}

std::string tier0_ptx_from_ir(const std::string& ir_text, const Target& target, const std::string& name) {
  return require_tier0().ptx_from_ir(ir_text, target, name);
}

std::string tier0_llvm_version() {
  return require_tier0().llvm_version();
}

} // namespace kda::runtime
