/// \file
/// Cache statistics: an enum, a name table that must cover it (checked by a
/// static_assert in cache_stats.cpp, as ccache's statistics.cpp does) and
/// thread-safe counters per DiskCache.
///
/// Counting rules (one get_or_build request ends in exactly one of
/// hit_memory, hit_disk, hit_after_wait, or a compile; a disk miss also counts
/// its reason):
///   hit_memory        served from the in-memory table
///   hit_disk          served from the disk entry found by the first lookup
///   hit_after_wait    served by another thread's build (single-flight) or by
///                     an entry another process published while we waited for
///                     the per-key lock
///   miss_*            a disk lookup missed, by MissReason
///   compile           the build callback ran (compile_ms_total adds its time)
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kda::cache {

enum class Statistic {
  hit_memory,
  hit_disk,
  hit_after_wait,
  miss_not_found,
  miss_corrupt,
  miss_checksum,
  miss_version,
  miss_key,
  miss_memory_only,
  compile,
  compile_failed,
  compile_ms_total,
  publish,
  publish_kept_existing,
  publish_failed,
  quarantine,
  lock_timeout,
  last_used_refresh,
  count_ // not a statistic: the number of enumerators
};

inline constexpr std::size_t k_statistic_count = static_cast<std::size_t>(Statistic::count_);

/// The stable name used in stats_json() and `kdajit cache stats`.
std::string_view statistic_name(Statistic statistic);
/// One line on what the counter means.
std::string_view statistic_description(Statistic statistic);

class CacheStats {
public:
  void add(Statistic statistic, std::uint64_t amount = 1);
  std::uint64_t get(Statistic statistic) const;
  /// {"hit_memory": 3, ...}: every statistic, in enum order.
  nlohmann::json to_json() const;

private:
  std::array<std::atomic<std::uint64_t>, k_statistic_count> m_counters{};
};

} // namespace kda::cache
