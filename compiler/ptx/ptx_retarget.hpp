/// \file
/// PTX from a code generator that stops short of a target, made acceptable to
/// it. LLVM 19's NVPTX backend knows processors up to sm_90a and PTX ISA 8.5;
/// a kernel that uses nothing newer (mma.sync, ldmatrix, cp.async, TMA) is
/// emitted for sm_90 and retargeted: `.target` names the real target and
/// `.version` is raised to the lowest PTX ISA version ptxas accepts for it
/// (Target::lowest_ptx_version), so that the oldest driver that can run the
/// target can also JIT or load what is built from it.
#pragma once

#include "compiler/target.hpp"

#include <string>
#include <string_view>

namespace kda {

/// The `.version` and `.target` of a PTX module's header.
struct PtxHeader {
  PtxVersion version;
  std::string target; ///< the first word after `.target` ("sm_90a")
};

/// Reads the header; throws InternalError (with the first line) when the text
/// has no `.version X.Y` or `.target` directive before its first entry.
PtxHeader read_ptx_header(std::string_view ptx);

/// `ptx` with `.target` set to `target.arch()` (keeping further words such as
/// `debug`) and `.version` set to the larger of its own and the target's
/// lowest accepted version. Nothing else changes.
std::string retarget_ptx(std::string_view ptx, const Target& target);

} // namespace kda
