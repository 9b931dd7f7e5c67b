// DiskCache: construction, lookup and publish. get_or_build is in
// get_or_build.cpp.
#include "cache/disk_cache.hpp"

#include "cache/sha256.hpp"
#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <ctime>

namespace kda::cache {
namespace {

std::int64_t now_unix() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

} // namespace

DiskCache::DiskCache(CacheConfig config, WarningSink warning_sink)
    : m_config(std::move(config)), m_warning_sink(std::move(warning_sink)) {
  if (m_config.root) {
    m_layout.emplace(*m_config.root);
    if (!m_config.fallback_warning.empty()) {
      warn_once(CacheWarning::cache_dir_refused, m_warning_sink, m_config.fallback_warning);
    }
  } else if (!m_config.memory_only_warning.empty()) {
    warn_once(CacheWarning::memory_only, m_warning_sink, m_config.memory_only_warning);
  }
  if (!m_config.notes.empty()) {
    std::string notes;
    for (const std::string& note : m_config.notes) {
      notes += (notes.empty() ? "" : "; ") + note;
    }
    warn_once(CacheWarning::ignored_setting, m_warning_sink, notes);
  }
  if (!m_config.lock_warning.empty() && m_layout) {
    warn_once(CacheWarning::no_locks, m_warning_sink, m_config.lock_warning);
  }
}

std::string DiskCache::entry_dir(const CacheKey& key) const {
  return m_layout ? m_layout->entry_dir(key) : std::string();
}

void DiskCache::set_after_commit_hook(std::function<void(const std::string&)> hook) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  m_after_commit_hook = std::move(hook);
}

LookupResult DiskCache::lookup(const CacheKey& key) {
  return lookup_disk(key, /*count=*/true);
}

LookupResult DiskCache::lookup_disk(const CacheKey& key, bool count) {
  if (!m_layout) {
    if (count) {
      m_stats.add(Statistic::miss_memory_only);
    }
    LookupResult out;
    out.miss = MissReason::memory_only;
    out.detail = "no disk cache";
    return out;
  }
  const std::string dir = m_layout->entry_dir(key);
  LookupResult result = read_entry(dir, key);
  if (result.hit()) {
    if (count) {
      m_stats.add(Statistic::hit_disk);
    }
    if (now_unix() - result.entry->manifest.last_used_unix >= k_last_used_refresh_s) {
      auto refreshed = std::make_shared<CacheEntry>(*result.entry);
      refresh_last_used(*refreshed);
      result.entry = std::move(refreshed);
    }
    return result;
  }
  if (count) {
    m_stats.add(miss_statistic(result.miss));
  }
  if (is_bad_entry(result.miss)) {
    if (const std::optional<std::string> moved = quarantine_entry(dir)) {
      m_stats.add(Statistic::quarantine);
      result.detail += fmt::format(" (moved to {})", *moved);
    }
  }
  return result;
}

void DiskCache::refresh_last_used(CacheEntry& entry) {
  Manifest updated = entry.manifest;
  updated.last_used_unix = now_unix();
  if (rewrite_manifest(*m_layout, entry.dir, updated)) {
    entry.manifest = std::move(updated);
    m_stats.add(Statistic::last_used_refresh);
  }
}

Manifest DiskCache::complete_manifest(const CacheKey& key, const BuiltEntry& built) const {
  Manifest m = built.manifest;
  m.manifest_version = k_manifest_version;
  m.key = key.hex();
  m.key_fields = key.fields();
  m.cubin_sha256 = sha256_hex(built.cubin);
  m.cubin_size = built.cubin.size();
  if (built.source) {
    const std::string source_sha = sha256_hex(*built.source);
    KDA_INTERNAL_ASSERT(m.source_sha256.empty() || m.source_sha256 == source_sha,
                        fmt::format("entry {}: manifest source_sha256 {} differs from the source being published ({})",
                                    key.short_id(), m.source_sha256, source_sha));
    m.source_sha256 = source_sha;
  }
  const std::int64_t now = now_unix();
  if (m.created_unix == 0) {
    m.created_unix = now;
  }
  if (m.last_used_unix == 0) {
    m.last_used_unix = now;
  }
  // What we write must read back: a builder's bad entry point or launch
  // object is a bug, not a corrupt cache.
  const ManifestParse check = manifest_from_json(to_json(m));
  KDA_INTERNAL_ASSERT(check.manifest.has_value(),
                      fmt::format("entry {}: invalid manifest from the builder: {}", key.short_id(), check.message));
  return m;
}

CacheEntryPtr DiskCache::commit(const CacheKey& key, const BuiltEntry& built, PublishOutcome& outcome) {
  auto entry = std::make_shared<CacheEntry>(CacheEntry{complete_manifest(key, built), built.cubin, {}});
  if (!m_layout) {
    outcome = PublishOutcome::memory_only;
    return entry;
  }
  entry->dir = m_layout->entry_dir(key);
  const CommitOutcome committed =
      write_entry(*m_layout, key, entry->manifest, entry->cubin, built.source, built.log);
  if (committed == CommitOutcome::kept_existing) {
    m_stats.add(Statistic::publish_kept_existing);
    outcome = PublishOutcome::kept_existing;
    return entry;
  }
  m_stats.add(Statistic::publish);
  outcome = PublishOutcome::published;
  std::function<void(const std::string&)> hook;
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    hook = m_after_commit_hook;
  }
  if (hook) {
    hook(entry->dir);
  }
  return entry;
}

PublishOutcome DiskCache::publish(const CacheKey& key, const Manifest& manifest, const Bytes& cubin,
                                  const std::optional<std::string>& source, const std::optional<std::string>& log) {
  PublishOutcome outcome = PublishOutcome::memory_only;
  CacheEntryPtr entry;
  try {
    entry = commit(key, BuiltEntry{manifest, cubin, source, log}, outcome);
  } catch (const CacheError&) {
    m_stats.add(Statistic::publish_failed);
    throw;
  }
  remember(key, entry);
  return outcome;
}

void DiskCache::remember(const CacheKey& key, const CacheEntryPtr& entry) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  m_memory[key.hex()] = entry;
}

} // namespace kda::cache
