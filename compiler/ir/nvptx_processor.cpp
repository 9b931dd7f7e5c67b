#include "compiler/ir/nvptx_processor.hpp"

namespace kda::ir {
namespace {

// The processors of LLVM 19's NVPTX backend that kdajit's targets map to.
bool known_to_llvm(const std::string& arch) {
  return arch == "sm_80" || arch == "sm_86" || arch == "sm_89" || arch == "sm_90" || arch == "sm_90a";
}

} // namespace

NvptxProcessor nvptx_processor(const Target& target) {
  if (known_to_llvm(target.arch())) {
    return {.cpu = target.arch(), .ptx = target.lowest_ptx_version, .retarget = false};
  }
  return {.cpu = "sm_90", .ptx = PtxVersion{7, 8}, .retarget = true};
}

} // namespace kda::ir
