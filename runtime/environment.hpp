/// \file
/// The runtime's own KDAJIT_* settings, read once per process. A value that
/// does not parse is ignored with one warning on stderr naming the variable,
/// its value and what it takes (never ignored silently, never guessed at).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kda::runtime {

/// A 0/1 switch: "1" true, "0" or "" false, anything else nullopt.
std::optional<bool> parse_switch(std::string_view text);

/// A fraction in [0, 1] written as a whole decimal number, or nullopt.
std::optional<double> parse_fraction(std::string_view text);

/// KDAJIT_DISABLE_JIT=1 turns JIT compilation off.
bool jit_disabled_by_environment();

/// KDAJIT_TIERED=1: eager calls use the tiered JIT unless PrefillOptions::tiered
/// says otherwise (anything but 0 or 1 is ignored with a warning).
bool tiered_by_environment();

/// KDAJIT_PREPARE_LEAD=F (a measurement aid: the overlap's lead as F x the
/// chunks per sequence), nullopt when unset.
std::optional<double> prepare_lead_from_environment();

/// A positive whole number (at most 2^31 - 1) written in decimal, or nullopt.
std::optional<int> parse_positive_count(std::string_view text);

/// KDAJIT_PREPARE_STREAMS=R (a measurement aid: the split's recurrence CTAs,
/// runtime/prepare_overlap), nullopt when unset or malformed (warned once).
std::optional<int> prepare_streams_from_environment();

/// How the split (runtime/prepare_overlap) orders its two kernels.
enum class SplitOrder {
  programmatic, ///< (the default) both on the caller's stream: the recurrence, then the walk as its dependent
  streams,      ///< the walk on the caller's stream, the recurrence on the high-priority side stream
  serial,       ///< both on the caller's stream: the walk to its end, then the recurrence (every record ready)
};

/// "programmatic", "streams" or "serial", or nullopt.
std::optional<SplitOrder> parse_split_order(std::string_view text);

/// Whether kernels may run one at a time in this process: CUDA_LAUNCH_BLOCKING
/// is 1, or a tool is injected into the driver (CUDA_INJECTION64_PATH: a
/// profiler or a sanitizer, several of which serialize kernels).
bool kernels_may_run_one_at_a_time();

/// KDAJIT_SPLIT_ORDER=programmatic|streams|serial (a measurement aid: the split's
/// launch order), nullopt when unset or malformed (warned once).
std::optional<SplitOrder> split_order_from_environment();

} // namespace kda::runtime
