/// \file
/// The LLVM tier's code generator as the runtime calls it: a `token`-family
/// KernelPlan to LLVM IR text (its cache key covers it) and to PTX for the
/// plan's target. LLVM is linked once, into libkdajit.so, which exports one
/// C-named function beside the public API, kda_internal_tier0_api_v1(), the
/// table of these functions (nothing of LLVM is exported). The library's own
/// runtime calls them directly; the kdajit CLI and the tests, which carry
/// the runtime themselves but not LLVM, open libkdajit.so beside them and
/// take only this table (runtime/tier0_codegen.hpp), so each process runs
/// one runtime. The table passes C++ types: it is for binaries of the same
/// build, never a public interface.
#pragma once

#include "compiler/kernel_plan.hpp"

#include <string>

namespace kda::tier0 {

struct Tier0Ir {
  std::string text; ///< the module as LLVM prints it (verified)
  double ms = 0.0;  ///< writing and printing it
};

struct Tier0Ptx {
  std::string ptx;  ///< for plan.target (header retargeted past sm_90a)
  double ir_ms = 0.0;  ///< writing the module
  double ptx_ms = 0.0; ///< LLVM's NVPTX code generation
};

/// The IR of the plan's token kernel. InternalError for a plan without one
/// or a module that fails llvm::verifyModule.
Tier0Ir ir_text(const KernelPlan& plan);

/// The plan's token kernel as PTX (written again: nothing is kept between calls).
Tier0Ptx ptx(const KernelPlan& plan);

/// PTX for `target` from LLVM IR text (a saved tier-0 module: `kdajit
/// repro`, or a test's): parsed, verified and compiled as ptx() does.
/// `name` labels it in messages. InternalError with LLVM's message for text
/// that does not parse or a module that fails the verifier.
std::string ptx_from_ir(const std::string& ir_text, const Target& target, const std::string& name);

/// The LLVM release ("19.1.7"): tier-0 cache keys name it.
std::string llvm_version();

/// The functions above, as libkdajit.so hands them out.
struct Api {
  int version = 1;
  Tier0Ir (*ir_text)(const KernelPlan& plan) = nullptr;
  Tier0Ptx (*ptx)(const KernelPlan& plan) = nullptr;
  std::string (*ptx_from_ir)(const std::string& ir_text, const Target& target, const std::string& name) = nullptr;
  std::string (*llvm_version)() = nullptr;
};

} // namespace kda::tier0

/// The table (exported by libkdajit.so; the generator identity of the build
/// it belongs to in `generator_id`, so that a binary takes only its own build's).
extern "C" __attribute__((visibility("default"))) const kda::tier0::Api* kda_internal_tier0_api_v1(
    const char** generator_id);
