/// \file
/// The workloads `kdajit bench` times: the cases of
/// ../shared/bench/peers-h200.md with the peers' numbers measured on the H200
/// (2026-11-29; FlashKDA 1ce47ea, FLA 0.5.2; same buffers every call, 20
/// warm-up calls, median of 100, bf16 state given and updated in place).
#pragma once

#include "runtime/tuning_table.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kda::tools {

struct BenchWorkload {
  std::string name;
  int heads = 0;
  std::vector<std::int64_t> seqlens; ///< one entry: fixed layout B = 1; several: packed
  double flashkda_ms = 0.0;          ///< peers on the H200, same settings; 0: not measured (h32_packed_1024x16)
  double fla_ms = 0.0;               ///< 0: not measured (the short-sequence workloads)
  bool standard = false;             ///< one of the six standard workloads
};

const std::vector<BenchWorkload>& bench_workloads();

/// The workloads of bench_workloads() whose (sequence x head) pairs put them in
/// shape class `c` on a device of `sm_count` SMs, of at most `max_tokens`
/// tokens, in table order (what `kdajit tune` times for the class).
std::vector<const BenchWorkload*> workloads_in_class(ShapeClass c, int sm_count, std::int64_t max_tokens);

/// Fewest bytes a prefill must move: q, k, v, g, beta read once, out written
/// once (1,282 B per token and head), bf16 state read and written once
/// (64 KiB per sequence and head; none for calls without a state,
/// `with_state` false), A_log and dt_bias.
std::int64_t minimal_bytes(const BenchWorkload& w, bool with_state = true);

/// Bytes of the bf16 checkpoint rows a call with checkpoints every `every`
/// tokens writes: ceil(L / every) rows of 128 x 128 per sequence and head
/// (spec section 1.5; none for a zero-length sequence). The serving-engine
/// goal bounds a checkpointed call by the plain one + 3 % + these bytes at
/// k_h200_copy_bandwidth.
std::int64_t checkpoint_bytes(const BenchWorkload& w, std::int64_t every);

inline constexpr double k_h200_copy_bandwidth = 4.3e12; ///< bytes/s, peers-h200.md's memory floor

} // namespace kda::tools
