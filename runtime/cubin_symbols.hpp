/// \file
/// The function symbols of a cubin (an ELF64 file), read from its symbol
/// table: which kernels a compile really produced, independent of the
/// ptxas log's wording.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace kda::runtime {

/// Names of the STT_FUNC symbols of `cubin`; empty when it is not a readable ELF64 file.
std::set<std::string> cubin_function_names(const std::vector<std::uint8_t>& cubin);

} // namespace kda::runtime
