#include "compiler/ir/tier0.hpp"

#include "compiler/ir/nvptx_codegen.hpp"
#include "compiler/ir/token_kernel.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>

namespace kda::tier0 {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

Tier0Ir ir_text(const KernelPlan& plan) {
  const auto start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  const std::unique_ptr<llvm::Module> module = ir::emit_token_kernel(context, plan);
  ir::verify_module(*module);
  Tier0Ir out;
  llvm::raw_string_ostream text(out.text);
  module->print(text, nullptr);
  text.flush();
  out.ms = ms_since(start);
  return out;
}

Tier0Ptx ptx(const KernelPlan& plan) {
  auto start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  const std::unique_ptr<llvm::Module> module = ir::emit_token_kernel(context, plan);
  Tier0Ptx out;
  out.ir_ms = ms_since(start);
  start = std::chrono::steady_clock::now();
  out.ptx = ir::emit_ptx(*module, plan.target); // verifies first
  out.ptx_ms = ms_since(start);
  return out;
}

std::string ptx_from_ir(const std::string& ir_text, const Target& target, const std::string& name) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module =
      llvm::parseIR(llvm::MemoryBufferRef(ir_text, name), error, context);
  if (!module) {
    std::string message;
    llvm::raw_string_ostream out(message);
    error.print(name.c_str(), out, /*ShowColors=*/false);
    out.flush();
    throw InternalError(fmt::format("LLVM IR {} does not parse: {}", name, message));
  }
  return ir::emit_ptx(*module, target); // verifies first
}

std::string llvm_version() {
  return ir::llvm_version();
}

} // namespace kda::tier0

extern "C" const kda::tier0::Api* kda_internal_tier0_api_v1(const char** generator_id) {
  static const kda::tier0::Api k_api{.version = 1,
                                     .ir_text = &kda::tier0::ir_text,
                                     .ptx = &kda::tier0::ptx,
                                     .ptx_from_ir = &kda::tier0::ptx_from_ir,
                                     .llvm_version = &kda::tier0::llvm_version};
  if (generator_id != nullptr) {
    *generator_id = KDAJIT_TIER0_BUILD_ID;
  }
  return &k_api;
}
