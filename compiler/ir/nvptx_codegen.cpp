#include "compiler/ir/nvptx_codegen.hpp"

#include "compiler/errors.hpp"
#include "compiler/ptx/ptx_retarget.hpp"

#include <fmt/format.h>

#include <llvm/ADT/SmallString.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <memory>
#include <mutex>
#include <optional>

namespace kda::ir {
namespace {

constexpr const char* k_triple = "nvptx64-nvidia-cuda";

const llvm::Target& nvptx_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(k_triple, error);
  if (target == nullptr) {
    throw InternalError(fmt::format("LLVM {} has no NVPTX target: {}", llvm_version(), error));
  }
  return *target;
}

std::unique_ptr<llvm::TargetMachine> target_machine(const NvptxProcessor& p) {
  const std::string features = fmt::format("+ptx{}{}", p.ptx.major, p.ptx.minor);
  std::unique_ptr<llvm::TargetMachine> tm(nvptx_target().createTargetMachine(
      k_triple, p.cpu, features, llvm::TargetOptions{}, std::optional<llvm::Reloc::Model>{}, std::nullopt,
      llvm::CodeGenOptLevel::Default));
  if (!tm) {
    throw InternalError(fmt::format("LLVM {} made no NVPTX target machine for {} ({})", llvm_version(), p.cpu, features));
  }
  return tm;
}

} // namespace

void verify_module(const llvm::Module& module) {
  std::string messages;
  llvm::raw_string_ostream out(messages);
  if (llvm::verifyModule(module, &out)) {
    out.flush();
    throw InternalError(fmt::format("the LLVM module '{}' is malformed: {}", module.getName().str(), messages));
  }
}

std::string emit_ptx(llvm::Module& module, const Target& target) {
  verify_module(module);
  const NvptxProcessor processor = nvptx_processor(target);
  const std::unique_ptr<llvm::TargetMachine> tm = target_machine(processor);
  module.setTargetTriple(k_triple);
  module.setDataLayout(tm->createDataLayout());
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager passes;
  if (tm->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    throw InternalError(fmt::format("LLVM {} cannot write PTX for {}", llvm_version(), processor.cpu));
  }
  passes.run(module);
  const std::string text(ptx.str());
  return processor.retarget ? retarget_ptx(text, target) : text;
}

std::string llvm_version() {
  return LLVM_VERSION_STRING;
}

} // namespace kda::ir
