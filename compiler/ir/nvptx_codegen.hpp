/// \file
/// LLVM IR to PTX in process, for the LLVM tier: LLVM 19's NVPTX backend
/// (Debian's llvm-19-dev, linked statically with only the components it
/// needs). LLVM 19 knows processors up to sm_90a and PTX ISA 8.5; a module for
/// a newer target (sm_100a, sm_100f, sm_103a, sm_120a, sm_120) is compiled for
/// sm_90 and its header retargeted (compiler/ptx/ptx_retarget.hpp), which is
/// right only for kernels that use nothing newer than sm_90's baseline
/// instructions. A cubin is then made by nvJitLink (runtime/ptx_linker.hpp).
#pragma once

#include "compiler/ir/nvptx_processor.hpp"
#include "compiler/target.hpp"

#include <string>

namespace llvm {
class Module;
}

namespace kda::ir {

/// Throws InternalError with llvm::verifyModule's messages when the module is
/// malformed (a tier-0 module is built by kdajit's emitter, never by a user).
void verify_module(const llvm::Module& module);

/// Sets the module's triple (nvptx64-nvidia-cuda) and data layout and returns
/// the PTX LLVM writes for it, retargeted for `target` where
/// nvptx_processor() says so. The module must pass verify_module (checked
/// first). Throws InternalError when LLVM cannot emit it.
std::string emit_ptx(llvm::Module& module, const Target& target);

/// The LLVM release the tier is built with ("19.1.7"): a tier-0 kernel's
/// cache key names it.
std::string llvm_version();

} // namespace kda::ir
