/// \file
/// The compile-time specialization of a kernel: only what changes the
/// generated code. Runtime values (T, N, H, B, pointers, strides, SM count,
/// lower_bound, scale, the cu_seqlens dtype, whether a state is read or
/// written, pool slots, seq_order, the checkpoint interval) are kernel
/// arguments and never part of it.
#pragma once

#include "compiler/schedule_enums.hpp"

#include <string>

namespace kda {

struct ShapeKey {
  int head_dim = 128;
  DType input_dtype = DType::bf16;      ///< q, k, v, g, beta, out
  StatePrecision state_dtype = StatePrecision::bf16; ///< the state tensor in memory
  LayoutKind layout = LayoutKind::fixed;
  /// Native checkpoints compiled into the recurrence (a plan without them
  /// carries no checkpoint code); the interval itself is a kernel argument.
  bool checkpoints = false;

  /// Canonical text, e.g. "d128.in_bf16.state_bf16.fixed", with ".checkpoints"
  /// appended when they are compiled in (part of the cache key).
  std::string canonical() const;
  bool operator==(const ShapeKey&) const = default;
};

} // namespace kda
