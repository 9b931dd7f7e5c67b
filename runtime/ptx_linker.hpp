/// \file
/// PTX to a cubin for one target, by nvJitLink (ptxas in process): how the
/// kernels of a code generator that writes PTX itself (the LLVM tier) are
/// built. No CUDA driver is needed, so CI builds them too.
#pragma once

#include "compiler/target.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kda::runtime {

struct LinkedCubin {
  std::vector<unsigned char> cubin;
  std::string info_log;              ///< ptxas's resource lines (-v) and warnings
  std::vector<std::string> options;  ///< as passed to nvJitLink
};

/// Assembles `ptx` (whose `.target` must already be `target.arch()`: see
/// compiler/ptx/ptx_retarget.hpp) into a cubin for `target`. `label` names
/// the input in nvJitLink's messages. Throws ToolchainError with nvJitLink's
/// error log and options when an input is refused or the link fails; never
/// returns an empty cubin (nvJitLink completes "successfully" with one when
/// an input was refused).
LinkedCubin link_ptx(std::string_view ptx, const Target& target, const std::string& label);

} // namespace kda::runtime
