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

/// One field of an ABI resolved once by name: where its bytes go and their
/// type, so that setting it on a call's dispatch path reads no field names
/// (an ABI's fields, names and declarations included, span dozens of cache
/// lines, which a call finds cold after the driver's work).
struct ArgSlot {
  const ArgAbi* abi = nullptr; ///< the ABI it was resolved in
  std::int32_t index = -1;     ///< -1: the ABI has no such field (setting it does nothing)
  std::int32_t offset = 0;
  ArgType type = ArgType::pointer;
  bool present() const { return index >= 0; }
};

/// Resolves fields of one ABI by name; each search starts after the field
/// last found, so names asked in ABI order cost one comparison each.
class ArgSlotFinder {
public:
  explicit ArgSlotFinder(const ArgAbi& abi) : m_abi(&abi) {}
  /// The field `name` (not present() when the ABI has none).
  ArgSlot operator()(std::string_view name);

private:
  const ArgAbi* m_abi;
  std::size_t m_cursor = 0;
};

/// Values for one launch, written straight into the parameter struct of the
/// ABI they are made for, by name or by a resolved ArgSlot. set(name) looks
/// the name up from the field after the last one set, so names set in ABI
/// order (prefill_call's shape_values) cost one comparison each; the values
/// that change per call go through slots (prefill_call's CallFields), which
/// read no names at all, and packed() hands out the bytes (docs/runtime.md,
/// host time). A name or slot the ABI lacks is ignored; a value of the wrong
/// type is remembered and reported by pack_args.
class ArgValues {
public:
  explicit ArgValues(const ArgAbi& abi);
  ArgValues& set(std::string_view name, const ArgValue& value);
  /// The same for a field an ArgSlotFinder of this ABI resolved
  /// (InternalError for another ABI's slot).
  ArgValues& set(const ArgSlot& slot, const ArgValue& value);
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
