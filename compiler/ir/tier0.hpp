/// \file
/// The LLVM tier's code generator as the runtime calls it: a `token`-family
/// KernelPlan to LLVM IR text (its cache key covers it) and to PTX for the
/// plan's target. LLVM is linked once, into libkdajit.so, whose version
/// script exports these functions beside the public API (and nothing of
/// LLVM); the kdajit CLI and the tests call them there, the library's own
/// runtime directly. runtime/tier0_codegen.hpp is how the runtime asks, and
/// says when a binary has no LLVM tier.
#pragma once

#include "compiler/kernel_plan.hpp"

#include <string>

#define KDA_TIER0_API __attribute__((visibility("default")))

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
KDA_TIER0_API Tier0Ir ir_text(const KernelPlan& plan);

/// The plan's token kernel as PTX (written again: nothing is kept between calls).
KDA_TIER0_API Tier0Ptx ptx(const KernelPlan& plan);

/// PTX for `target` from LLVM IR text (a saved tier-0 module: `kdajit
/// repro`, or a test's): parsed, verified and compiled as ptx() does.
/// `name` labels it in messages. InternalError with LLVM's message for text
/// that does not parse or a module that fails the verifier.
KDA_TIER0_API std::string ptx_from_ir(const std::string& ir_text, const Target& target, const std::string& name);

/// The LLVM release ("19.1.7"): tier-0 cache keys name it.
KDA_TIER0_API std::string llvm_version();

} // namespace kda::tier0
