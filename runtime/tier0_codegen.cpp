#include "runtime/tier0_codegen.hpp"

#include "compiler/errors.hpp"

// Weak references: defined where LLVM is linked (libkdajit.so's own copy of
// compiler/ir, or, for a binary linking libkdajit.so, resolved there by the
// dynamic loader); null in a binary without the LLVM tier.
namespace kda::tier0 {
[[gnu::weak]] Tier0Ir ir_text(const KernelPlan& plan);
[[gnu::weak]] Tier0Ptx ptx(const KernelPlan& plan);
[[gnu::weak]] std::string ptx_from_ir(const std::string& ir_text, const Target& target, const std::string& name);
[[gnu::weak]] std::string llvm_version();
} // namespace kda::tier0

namespace kda::runtime {
namespace {

void require_tier0() {
  if (!tier0_available()) {
    throw ToolchainError("this kdajit build has no LLVM tier (configure with -DKDAJIT_LLVM_TIER=ON, which needs "
                         "llvm-19-dev): the 'token' family's kernels cannot be written");
  }
}

} // namespace

bool tier0_available() {
  return &tier0::ir_text != nullptr && &tier0::ptx != nullptr && &tier0::ptx_from_ir != nullptr &&
         &tier0::llvm_version != nullptr;
}

tier0::Tier0Ir tier0_ir(const KernelPlan& plan) {
  require_tier0();
  return tier0::ir_text(plan);
}

tier0::Tier0Ptx tier0_ptx(const KernelPlan& plan) {
  require_tier0();
  return tier0::ptx(plan);
}

std::string tier0_ptx_from_ir(const std::string& ir_text, const Target& target, const std::string& name) {
  require_tier0();
  return tier0::ptx_from_ir(ir_text, target, name);
}

std::string tier0_llvm_version() {
  require_tier0();
  return tier0::llvm_version();
}

} // namespace kda::runtime
