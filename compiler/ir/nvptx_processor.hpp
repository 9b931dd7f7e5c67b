/// \file
/// Which LLVM NVPTX processor and PTX ISA the LLVM tier compiles for when
/// kdajit asks for a target (pure logic: no LLVM here). LLVM 19 knows
/// processors up to sm_90a and PTX ISA 8.5; newer targets build for sm_90 and
/// have their PTX header rewritten (compiler/ptx/ptx_retarget.hpp).
#pragma once

#include "compiler/target.hpp"

#include <string>

namespace kda::ir {

/// What LLVM compiles for when kdajit asks for `target`.
struct NvptxProcessor {
  std::string cpu;         ///< an LLVM NVPTX processor: "sm_80", "sm_90", "sm_90a"
  PtxVersion ptx;          ///< the PTX ISA LLVM writes (its "+ptxXY" feature)
  bool retarget = false;   ///< the header is rewritten for target.arch() afterwards
};

/// The processor for `target`: its own architecture where LLVM 19 knows it
/// (sm_80, sm_90, sm_90a and the proxies, which build for sm_90a), at the
/// target's lowest PTX ISA version; sm_90 at PTX 7.8, retargeted, otherwise.
NvptxProcessor nvptx_processor(const Target& target);

} // namespace kda::ir
