// DiskCache::get_or_build: single flight in the process, per-key locks
// across processes, build, publish, read back, rebuild once after corruption.
#include "cache/disk_cache.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <chrono>

namespace kda::cache {

CacheEntryPtr DiskCache::get_or_build(const CacheKey& key, const BuildFn& build) {
  std::promise<CacheEntryPtr> promise;
  std::shared_future<CacheEntryPtr> leader_build;
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    if (const auto it = m_memory.find(key.hex()); it != m_memory.end()) {
      m_stats.add(Statistic::hit_memory);
      return it->second;
    }
    if (const auto it = m_in_flight.find(key.hex()); it != m_in_flight.end()) {
      leader_build = it->second;
    } else {
      m_in_flight.emplace(key.hex(), promise.get_future().share());
    }
  }
  if (leader_build.valid()) {
    CacheEntryPtr entry = leader_build.get(); // rethrows the leader's exception
    m_stats.add(Statistic::hit_after_wait);
    return entry;
  }
  try {
    CacheEntryPtr entry = load_or_build(key, build);
    {
      const std::lock_guard<std::mutex> lock(m_mutex);
      m_memory[key.hex()] = entry;
      m_in_flight.erase(key.hex());
    }
    promise.set_value(entry);
    return entry;
  } catch (...) {
    {
      const std::lock_guard<std::mutex> lock(m_mutex);
      m_in_flight.erase(key.hex());
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

CacheEntryPtr DiskCache::load_or_build(const CacheKey& key, const BuildFn& build) {
  const LookupResult first = lookup_disk(key, /*count=*/true);
  if (first.hit()) {
    return first.entry;
  }
  PublishOutcome outcome = PublishOutcome::memory_only;
  if (!m_layout) {
    return commit(key, run_build(build), outcome);
  }
  bool rebuilding = is_bad_entry(first.miss);
  bool lock_attempted = false;
  const FileLock lock = lock_key(key, lock_attempted);
  if (lock_attempted) {
    const LookupResult again = lookup_disk(key, /*count=*/false);
    if (again.hit()) {
      m_stats.add(Statistic::hit_after_wait);
      return again.entry;
    }
    rebuilding = rebuilding || is_bad_entry(again.miss);
  }
  for (;;) {
    const BuiltEntry built = run_build(build);
    CacheEntryPtr ours;
    try {
      ours = commit(key, built, outcome);
    } catch (const CacheError& e) {
      m_stats.add(Statistic::publish_failed);
      warn_once(CacheWarning::publish_failed, m_warning_sink,
                fmt::format("{}, so kernels are kept in memory only", e.what()));
      return std::make_shared<CacheEntry>(CacheEntry{complete_manifest(key, built), built.cubin, {}});
    }
    // Read back what is committed now (ours, or the entry another process
    // committed first) so that every process uses the same bytes.
    const LookupResult check = lookup_disk(key, /*count=*/false);
    if (check.hit()) {
      return check.entry;
    }
    if (!is_bad_entry(check.miss)) {
      return ours; // e.g. moved away by another process meanwhile
    }
    if (rebuilding) {
      throw CacheError(fmt::format("entry {} is bad again after a rebuild ({}: {})", m_layout->entry_dir(key),
                                   miss_reason_name(check.miss), check.detail));
    }
    rebuilding = true;
  }
}

BuiltEntry DiskCache::run_build(const BuildFn& build) {
  const auto start = std::chrono::steady_clock::now();
  m_stats.add(Statistic::compile);
  BuiltEntry built;
  try {
    built = build();
  } catch (...) {
    m_stats.add(Statistic::compile_failed);
    throw;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  m_stats.add(Statistic::compile_ms_total, static_cast<std::uint64_t>(ms));
  if (built.manifest.compile_ms == 0) {
    built.manifest.compile_ms = ms;
  }
  return built;
}

FileLock DiskCache::lock_key(const CacheKey& key, bool& attempted) {
  attempted = false;
  if (!m_config.lock_dir) {
    return {};
  }
  attempted = true;
  const std::string path = fmt::format("{}/{}.lock", *m_config.lock_dir, key.hex());
  LockAttempt attempt = acquire_file_lock(path, m_config.lock_timeout);
  switch (attempt.outcome) {
  case LockOutcome::acquired:
    return std::move(attempt.lock);
  case LockOutcome::timed_out:
    m_stats.add(Statistic::lock_timeout);
    return {};
  case LockOutcome::failed:
    warn_once(CacheWarning::lock_failed, m_warning_sink,
              fmt::format("cannot lock {}: {}: building without a cross-process lock", path,
                          errno_text(attempt.error)));
    return {};
  }
  return {};
}

} // namespace kda::cache
