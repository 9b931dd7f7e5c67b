/// \file
/// The generic launcher's argument packing: fills the by-value parameter
/// struct of a plan's argument ABI from named values, for every kernel variant.
#pragma once

#include "compiler/kernel_plan.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kda {

using TensorMapValue = std::array<std::uint64_t, 16>; ///< CUtensorMap bytes
using ArgValue = std::variant<const void*, std::int64_t, std::int32_t, float, TensorMapValue>;

/// Named values for one launch. A flat list searched linearly: a call sets
/// about 30 names once and packs them once, so this beats a map's node
/// allocations on the dispatch path (docs/runtime.md, host time).
class ArgValues {
public:
  ArgValues& set(std::string_view name, ArgValue value);
  const ArgValue* find(std::string_view name) const;

private:
  std::vector<std::pair<std::string, ArgValue>> m_values;
};

/// The parameter struct's bytes. Every field of the ABI must have a value of
/// its type (InternalError otherwise: a launcher bug, not a user error).
std::vector<std::uint8_t> pack_args(const ArgAbi& abi, const ArgValues& values);

} // namespace kda
