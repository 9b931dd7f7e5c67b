/// \file
/// An entry point's resources as the cache records them: registers, stack
/// frame and static SMEM from the cubin (runtime/cubin_symbols.hpp); spills,
/// barriers and ptxas's wgmma notes from the ptxas log
/// (runtime/ptxas_log.hpp), whose static SMEM must agree with the cubin's. Spills go to the stack frame, so a kernel whose
/// cubin records no frame has none whatever the log says or omits; a kernel
/// with a frame needs its log lines (its spills are unknown otherwise); one
/// the cubin records nothing for is refused.
#pragma once

#include "runtime/cubin_symbols.hpp"
#include "runtime/ptxas_log.hpp"

#include <map>
#include <string>
#include <variant>

namespace kda::runtime {

/// The usage of `entry`, or why it cannot be known.
std::variant<ResourceUsage, std::string> entry_resources(const std::string& entry, const CubinResources* cubin,
                                                         const ResourceUsage* log);

/// The same for `entry` looked up in what a cubin records
/// (cubin_resources) and what its ptxas log lists (parse_ptxas_resource_log).
std::variant<ResourceUsage, std::string> entry_resources(const std::string& entry,
                                                         const std::map<std::string, CubinResources>& recorded,
                                                         const std::map<std::string, ResourceUsage>& logged);

} // namespace kda::runtime
