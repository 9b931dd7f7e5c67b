/// \file
/// How the runtime reaches the LLVM tier's code generator (compiler/ir/tier0.hpp).
/// LLVM is linked into libkdajit.so only. Inside it the runtime calls the
/// generator directly; a binary that carries the runtime itself (the kdajit
/// CLI, the tests) opens the libkdajit.so of its build beside it
/// (KDAJIT_LIBRARY, then ../package/, ../prefix/<libdir>/ and ../<libdir>/
/// from the binary, then the loader's path) and takes only the generator's table from it, checked
/// to be the same build. Without either, a `token`-family kernel is a
/// ToolchainError that says why.
#pragma once

#include "compiler/ir/tier0.hpp"
#include "compiler/kernel_plan.hpp"
#include "compiler/target.hpp"

#include <string>

namespace kda::runtime {

/// Whether this process can write tier-0 kernels.
bool tier0_available();

/// compiler/ir/tier0.hpp's functions; ToolchainError when !tier0_available().
tier0::Tier0Ir tier0_ir(const KernelPlan& plan);
tier0::Tier0Ptx tier0_ptx(const KernelPlan& plan);
std::string tier0_ptx_from_ir(const std::string& ir_text, const Target& target, const std::string& name);
std::string tier0_llvm_version();

} // namespace kda::runtime
