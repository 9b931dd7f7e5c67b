#include "runtime/tier0_build.hpp"

#include "compiler/errors.hpp"
#include "runtime/cubin_symbols.hpp"
#include "runtime/entry_resources.hpp"
#include "runtime/nvjitlink_library.hpp"
#include "runtime/ptx_linker.hpp"
#include "runtime/tier0_codegen.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <variant>

namespace kda::runtime {

Tier0Build build_tier0(const KernelPlan& plan) {
  if (!plan.token) {
    throw InternalError(fmt::format("plan {} has no token kernel to build with the LLVM tier", plan.schedule_name));
  }
  const tier0::Tier0Ptx code = tier0_ptx(plan);
  Tier0Build out;
  out.ptx = code.ptx;
  out.ir_ms = code.ir_ms;
  out.ptx_ms = code.ptx_ms;
  const auto start = std::chrono::steady_clock::now();
  LinkedCubin linked = link_ptx(code.ptx, plan.target, plan.token->entry_name + ".ll.ptx");
  out.cubin_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  out.cubin = std::move(linked.cubin);
  out.log = std::move(linked.info_log);
  out.options = std::move(linked.options);
  const std::string& entry = plan.token->entry_name;
  const std::map<std::string, ResourceUsage> logged = parse_ptxas_resource_log(out.log);
  // nvJitLink's cubins for sm_90 and later count the 1 KiB system reserve in
  // the kernel's .nv.shared section without saying so
  const std::map<std::string, CubinResources> recorded = cubin_resources(
      out.cubin, plan.target.cc_major >= 9 ? SmemReserve::counted : SmemReserve::as_sections_say);
  const std::variant<ResourceUsage, std::string> usage = entry_resources(entry, recorded, logged);
  if (const std::string* why = std::get_if<std::string>(&usage)) {
    throw InternalError(fmt::format("the tier-0 cubin of {} for {}: {}", plan.schedule_name, plan.target.name, *why));
  }
  out.resources = std::get<ResourceUsage>(usage);
  return out;
}

Tier0LinkerIdentity tier0_linker_identity() {
  const NvJitLinkLibrary& library = NvJitLinkLibrary::get();
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::canonical(library.path(), error);
  const std::uintmax_t size = error ? 0 : std::filesystem::file_size(resolved, error);
  return {library.version(), fmt::format("{} ({} bytes)", error ? library.path() : resolved.filename().string(),
                                         error ? 0 : size)};
}

} // namespace kda::runtime
