/// \file
/// The generic launcher's argument packing: fills the by-value parameter
/// struct of a plan's argument ABI from named values, for every kernel variant.
#pragma once

#include "compiler/kernel_plan.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kda {

using TensorMapValue = std::array<std::uint64_t, 16>; ///< CUtensorMap bytes
using ArgValue = std::variant<const void*, std::int64_t, std::int32_t, float, TensorMapValue>;

/// Named values for one launch, written straight into the parameter struct
/// of the ABI they are made for. set() looks the name up from the field after
/// the last one set, so a caller that sets the fields in ABI order
/// (prefill_call's call_values) pays one comparison per value, and pack_args
/// hands out the bytes: this runs on every call's dispatch path
/// (docs/runtime.md, host time). A name the ABI lacks is ignored; a value of
/// the wrong type is remembered and reported by pack_args.
class ArgValues {
public:
  explicit ArgValues(const ArgAbi& abi);
  ArgValues& set(std::string_view name, const ArgValue& value);
  /// The value set for `name`, if any (of its field's type).
  std::optional<ArgValue> find(std::string_view name) const;
  const ArgAbi& abi() const { return *m_abi; }
  /// The parameter struct as set so far, once every field has a value of its
  /// type (InternalError otherwise): what a launch passes, with no copy.
  const std::vector<std::uint8_t>& packed() const;

private:
  friend std::vector<std::uint8_t> pack_args(const ArgAbi& abi, const ArgValues& values);
  enum class Slot : std::uint8_t { unset, set, wrong_type };
  std::optional<std::size_t> index_of(std::string_view name) const;

  const ArgAbi* m_abi;
  std::vector<std::uint8_t> m_bytes;
  std::vector<Slot> m_slots;
  mutable std::size_t m_cursor = 0;
};

/// The parameter struct's bytes. Every field of the ABI must have a value of
/// its type (InternalError otherwise: a launcher bug, not a user error).
std::vector<std::uint8_t> pack_args(const ArgAbi& abi, const ArgValues& values);

} // namespace kda
