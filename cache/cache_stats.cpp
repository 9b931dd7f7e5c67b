#include "cache/cache_stats.hpp"

#include "compiler/errors.hpp"

#include <iterator>

namespace kda::cache {
namespace {

struct StatisticInfo {
  Statistic statistic;
  std::string_view name;
  std::string_view description;
};

constexpr StatisticInfo k_statistic_table[] = {
    {Statistic::hit_memory, "hit_memory", "served from the in-memory table"},
    {Statistic::hit_disk, "hit_disk", "served from the disk cache"},
    {Statistic::hit_after_wait, "hit_after_wait", "served by another thread's or process's build after waiting"},
    {Statistic::miss_not_found, "miss_not_found", "no committed entry on disk"},
    {Statistic::miss_corrupt, "miss_corrupt", "manifest unreadable, truncated or invalid"},
    {Statistic::miss_checksum, "miss_checksum", "cubin missing or its sha256/size differs from the manifest"},
    {Statistic::miss_version, "miss_version", "manifest schema version differs"},
    {Statistic::miss_key, "miss_key", "manifest key differs from the requested key or its fields"},
    {Statistic::miss_memory_only, "miss_memory_only", "lookup without a disk cache"},
    {Statistic::compile, "compile", "build callback runs"},
    {Statistic::compile_failed, "compile_failed", "build callback runs that threw"},
    {Statistic::compile_ms_total, "compile_ms_total", "milliseconds spent in build callbacks"},
    {Statistic::publish, "publish", "entries committed to disk"},
    {Statistic::publish_kept_existing, "publish_kept_existing", "publishes that found the key already committed"},
    {Statistic::publish_failed, "publish_failed", "publishes that failed with an I/O error"},
    {Statistic::quarantine, "quarantine", "bad entries renamed to <key>.corrupt-<time>"},
    {Statistic::lock_timeout, "lock_timeout", "per-key lock waits that timed out (built privately)"},
    {Statistic::last_used_refresh, "last_used_refresh", "manifests rewritten to refresh last_used_unix"},
};

static_assert(std::size(k_statistic_table) == k_statistic_count, "k_statistic_table must cover enum Statistic");

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < std::size(k_statistic_table); ++i) {
    if (static_cast<std::size_t>(k_statistic_table[i].statistic) != i) {
      return false;
    }
  }
  return true;
}
static_assert(table_in_enum_order(), "k_statistic_table must list enum Statistic in order");

const StatisticInfo& info(Statistic statistic) {
  const auto index = static_cast<std::size_t>(statistic);
  KDA_INTERNAL_ASSERT(index < k_statistic_count, "statistic out of range");
  return k_statistic_table[index];
}

} // namespace

std::string_view statistic_name(Statistic statistic) {
  return info(statistic).name;
}

std::string_view statistic_description(Statistic statistic) {
  return info(statistic).description;
}

void CacheStats::add(Statistic statistic, std::uint64_t amount) {
  const auto index = static_cast<std::size_t>(statistic);
  KDA_INTERNAL_ASSERT(index < k_statistic_count, "statistic out of range");
  m_counters[index].fetch_add(amount, std::memory_order_relaxed);
}

std::uint64_t CacheStats::get(Statistic statistic) const {
  const auto index = static_cast<std::size_t>(statistic);
  KDA_INTERNAL_ASSERT(index < k_statistic_count, "statistic out of range");
  return m_counters[index].load(std::memory_order_relaxed);
}

nlohmann::json CacheStats::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const StatisticInfo& row : k_statistic_table) {
    out[std::string(row.name)] = get(row.statistic);
  }
  return out;
}

} // namespace kda::cache
