/// \file
/// Cache warnings go to a caller-supplied sink, each kind at most once per
/// process (a read-only home must not print a line per kernel).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kda::cache {

using WarningSink = std::function<void(const std::string& message)>;

enum class CacheWarning {
  memory_only,     ///< no usable cache directory
  no_locks,        ///< no usable lock directory
  lock_failed,     ///< a lock file could not be opened or locked (not a timeout)
  publish_failed,  ///< an entry could not be written; kept in memory
  bad_max_bytes,   ///< KDAJIT_MAX_BYTES does not parse: the default cap applies
  cache_dir_refused, ///< KDAJIT_CACHE_DIR refused: a later candidate is the cache
  ignored_setting, ///< a cache setting that does not parse (CacheConfig::notes)
  bad_disable_jit, ///< KDAJIT_DISABLE_JIT is neither 0 nor 1 (runtime/environment.hpp)
  bad_prepare_lead, ///< KDAJIT_PREPARE_LEAD is not a fraction (runtime/environment.hpp)
  bad_prepare_streams, ///< KDAJIT_PREPARE_STREAMS is not a positive count (runtime/environment.hpp)
  bad_split_order, ///< KDAJIT_SPLIT_ORDER is neither streams nor programmatic (runtime/environment.hpp)
  bad_tiered,      ///< KDAJIT_TIERED is neither 0 nor 1 (runtime/environment.hpp)
  count_           // not a warning: the number of enumerators
};

/// Writes "kdajit: warning: <message>" to stderr.
WarningSink stderr_warning_sink();

/// Calls `sink(message)` unless a warning of this kind was already emitted in
/// this process. Returns whether it was emitted. Thread-safe.
bool warn_once(CacheWarning kind, const WarningSink& sink, const std::string& message);

/// Forgets which warnings were emitted (tests only).
void reset_warnings_for_testing();

} // namespace kda::cache
