/// \file
/// A `token`-family plan to a cubin, the LLVM tier's whole build: IR and PTX
/// by LLVM's NVPTX backend in process (runtime/tier0_codegen.hpp), the cubin
/// by nvJitLink (runtime/ptx_linker.hpp), each step timed. No CUDA driver is
/// needed, so CI builds these kernels too.
#pragma once

#include "compiler/kernel_plan.hpp"
#include "runtime/ptxas_log.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kda::runtime {

struct Tier0Build {
  std::vector<std::uint8_t> cubin;
  std::string ptx;
  std::string log;              ///< nvJitLink's info log (ptxas -v lines)
  std::vector<std::string> options; ///< as passed to nvJitLink
  ResourceUsage resources;      ///< of the one entry point
  double ir_ms = 0.0;           ///< writing the module with IRBuilder
  double ptx_ms = 0.0;          ///< LLVM's NVPTX code generation
  double cubin_ms = 0.0;        ///< nvJitLink (ptxas)
};

/// Builds the plan's token kernel for plan.target. ToolchainError without
/// the LLVM tier or nvJitLink, or when ptxas refuses the PTX;
/// InternalError when the cubin lacks the entry point's records.
Tier0Build build_tier0(const KernelPlan& plan);

/// The nvJitLink that assembles tier-0 cubins, as cache keys name it: its
/// version ("13.0": which drivers load its cubins) and library file.
struct Tier0LinkerIdentity {
  std::string version;
  std::string build;
};
Tier0LinkerIdentity tier0_linker_identity();

} // namespace kda::runtime
