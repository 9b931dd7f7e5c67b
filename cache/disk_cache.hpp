/// \file
/// The kernel cache: an in-memory table in front of a content-addressed disk
/// cache (cache-and-jit.md 6.2-6.4; the layout is in entry_io.hpp, the
/// manifest in manifest.hpp). It stores and retrieves bytes; the runtime
/// above it compiles.
///
/// get_or_build(key, build):
///   1. in-memory table → hit_memory
///   2. disk lookup → hit_disk (a bad entry is quarantined and counted)
///   3. memory-only cache: build, keep in memory
///   4. single flight in the process: other threads asking for the same key
///      wait on the first one's shared_future (hit_after_wait)
///   5. per-key fcntl lock across processes, waited for up to
///      config.lock_timeout; then look up again (another process may have
///      published: hit_after_wait). On timeout, build privately anyway
///      (the atomic publish still prevents corruption).
///   6. build, publish, read the entry back. If the entry read back is bad,
///      quarantine it and rebuild once; bad again → CacheError.
/// A publish that fails with an I/O error (disk full, directory removed)
/// warns once per process and returns the built entry from memory.
///
/// Errors: a miss is a value (LookupResult), never an exception. CacheError
/// is thrown by publish() for I/O failures, and by get_or_build() only when a
/// rebuilt entry reads back corrupt. Exceptions from the build callback
/// propagate to the caller and to every thread waiting on that build; nothing
/// is cached for the key, so a later call builds again.
///
/// Every member function is thread-safe.
#pragma once

#include "cache/cache_config.hpp"
#include "cache/cache_entry.hpp"
#include "cache/cache_key.hpp"
#include "cache/cache_stats.hpp"
#include "cache/entry_io.hpp"
#include "cache/file_lock.hpp"
#include "cache/warnings.hpp"
#include "compiler/errors.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace kda::cache {

/// last_used_unix is rewritten on a disk hit at most this often (not atime).
inline constexpr std::int64_t k_last_used_refresh_s = 24 * 60 * 60;

enum class PublishOutcome {
  published,     ///< committed to disk
  kept_existing, ///< another process had committed the key first; its entry stays
  memory_only,   ///< no disk cache: kept in memory
};

class DiskCache {
public:
  using BuildFn = std::function<BuiltEntry()>;

  /// Emits config's memory-only and no-lock warnings (once per process each).
  explicit DiskCache(CacheConfig config, WarningSink warning_sink = stderr_warning_sink());

  bool memory_only() const { return !m_layout.has_value(); }
  const CacheConfig& config() const { return m_config; }
  /// `<root>/v1/entries/<key[0:2]>/<key>`, or "" for a memory-only cache.
  std::string entry_dir(const CacheKey& key) const;

  /// The disk entry for `key`, or why there is none. Does not consult the
  /// in-memory table (a memory-only cache always answers memory_only). A bad
  /// entry is quarantined, so the next lookup says not_found. On a hit,
  /// refreshes last_used_unix if it is a day old. Counts hit_disk or miss_*.
  LookupResult lookup(const CacheKey& key);

  /// Completes `manifest` (see BuiltEntry), commits the entry and keeps it in
  /// memory. Throws CacheError on I/O failure.
  PublishOutcome publish(const CacheKey& key, const Manifest& manifest, const Bytes& cubin,
                         const std::optional<std::string>& source = std::nullopt,
                         const std::optional<std::string>& log = std::nullopt);

  /// The entry for `key`, built with `build` at most once across threads
  /// (and, with locks, across processes). See the file comment.
  CacheEntryPtr get_or_build(const CacheKey& key, const BuildFn& build);

  const CacheStats& stats() const { return m_stats; }
  nlohmann::json stats_json() const { return m_stats.to_json(); }

  /// Called with the entry directory after each commit. For fault-injection
  /// tests only.
  void set_after_commit_hook(std::function<void(const std::string& entry_dir)> hook);

private:
  LookupResult lookup_disk(const CacheKey& key, bool count);
  void refresh_last_used(CacheEntry& entry);
  Manifest complete_manifest(const CacheKey& key, const BuiltEntry& built) const;
  CacheEntryPtr commit(const CacheKey& key, const BuiltEntry& built, PublishOutcome& outcome);
  CacheEntryPtr load_or_build(const CacheKey& key, const BuildFn& build);
  BuiltEntry run_build(const BuildFn& build);
  FileLock lock_key(const CacheKey& key, bool& attempted);
  void remember(const CacheKey& key, const CacheEntryPtr& entry);

  CacheConfig m_config;
  std::optional<CacheLayout> m_layout; ///< nullopt: memory only
  WarningSink m_warning_sink;
  CacheStats m_stats;

  std::mutex m_mutex; // guards the members below
  std::unordered_map<std::string, CacheEntryPtr> m_memory;
  std::unordered_map<std::string, std::shared_future<CacheEntryPtr>> m_in_flight;
  std::function<void(const std::string&)> m_after_commit_hook;
};

} // namespace kda::cache
