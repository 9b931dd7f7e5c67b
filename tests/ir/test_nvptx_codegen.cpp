// The LLVM tier's code generator: a module built with IRBuilder passes
// llvm::verifyModule, LLVM 19's NVPTX backend writes PTX for every kdajit
// target (retargeted past sm_90a), and ptxas (nvJitLink) assembles each into
// a cubin; a malformed module is an InternalError naming it.
#include "compiler/errors.hpp"
#include "compiler/ir/nvptx_codegen.hpp"
#include "compiler/ptx/ptx_retarget.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "runtime/ptx_linker.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <memory>

using namespace kda;
using Catch::Contains;

namespace {

// kda_add_one(float* p): p[threadIdx.x] += 1, marked a kernel the way NVVM
// IR does (!nvvm.annotations).
std::unique_ptr<llvm::Module> add_one_module(llvm::LLVMContext& context) {
  auto module = std::make_unique<llvm::Module>("kda_add_one", context);
  llvm::IRBuilder<> b(context);
  llvm::PointerType* global = llvm::PointerType::get(context, 1);
  llvm::Function* kernel = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {global}, false),
                                                  llvm::Function::ExternalLinkage, "kda_add_one", module.get());
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", kernel));
  llvm::Value* tid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  llvm::Value* at = b.CreateInBoundsGEP(b.getFloatTy(), kernel->getArg(0), b.CreateZExt(tid, b.getInt64Ty()));
  llvm::Value* x = b.CreateLoad(b.getFloatTy(), at);
  b.CreateStore(b.CreateFAdd(x, llvm::ConstantFP::get(b.getFloatTy(), 1.0)), at);
  b.CreateRetVoid();
  llvm::Metadata* annotation[] = {llvm::ValueAsMetadata::get(kernel), llvm::MDString::get(context, "kernel"),
                                  llvm::ValueAsMetadata::get(b.getInt32(1))};
  module->getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(context, annotation));
  return module;
}


} // namespace

TEST_CASE("nvptx codegen: LLVM's processor for each target, retargeted past sm_90a", "[compiler][ir]") {
  CHECK(ir::llvm_version().rfind("19.", 0) == 0);
  const ir::NvptxProcessor sm80 = ir::nvptx_processor(test::target_named("sm_80"));
  CHECK(sm80.cpu == "sm_80");
  CHECK(sm80.ptx == PtxVersion{7, 0});
  CHECK_FALSE(sm80.retarget);
  const ir::NvptxProcessor sm90a = ir::nvptx_processor(test::target_named("sm_90a"));
  CHECK(sm90a.cpu == "sm_90a");
  CHECK(sm90a.ptx == PtxVersion{8, 0});
  CHECK_FALSE(sm90a.retarget);
  CHECK(ir::nvptx_processor(test::target_named("sm_90a_proxy")).cpu == "sm_90a"); // the proxies build for sm_90a
  for (const char* name : {"sm_100a", "sm_100f", "sm_103a", "sm_120a", "sm_120"}) {
    INFO(name);
    const ir::NvptxProcessor p = ir::nvptx_processor(test::target_named(name));
    CHECK(p.cpu == "sm_90");
    CHECK(p.retarget);
  }
}

TEST_CASE("nvptx codegen: an IRBuilder kernel becomes PTX for every target and assembles with ptxas",
          "[compiler][ir][nvjitlink]") {
  for (const Target& t : all_targets()) {
    INFO(t.name);
    llvm::LLVMContext context;
    const std::unique_ptr<llvm::Module> module = add_one_module(context);
    REQUIRE_NOTHROW(ir::verify_module(*module));
    const std::string ptx = ir::emit_ptx(*module, t);
    const PtxHeader header = read_ptx_header(ptx);
    CHECK(header.target == t.arch());
    CHECK(header.version >= t.lowest_ptx_version);
    CHECK_THAT(ptx, Contains(".entry kda_add_one") && Contains("add.rn.f32") && Contains("%tid.x"));
    const runtime::LinkedCubin linked = runtime::link_ptx(ptx, t, "kda_add_one.ll.ptx");
    CHECK(test::is_elf(linked.cubin, 1000));
    CHECK_THAT(linked.info_log, Contains("kda_add_one"));
  }
}

TEST_CASE("nvptx codegen: a malformed module is an InternalError with the verifier's message", "[compiler][ir]") {
  llvm::LLVMContext context;
  llvm::Module module("kda_broken", context);
  llvm::Function* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context), false),
                                             llvm::Function::ExternalLinkage, "no_terminator", &module);
  llvm::BasicBlock::Create(context, "entry", f); // a block without a terminator
  try {
    ir::verify_module(module);
    FAIL("expected InternalError");
  } catch (const InternalError& e) {
    CHECK_THAT(e.what(), Contains("kda_broken") && Contains("terminator"));
  }
  CHECK_THROWS_AS(ir::emit_ptx(module, test::target_named("sm_90")), InternalError);
}
