#include "cache/eviction.hpp"

#include "cache/file_lock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace kda::cache {
namespace {

struct Field {
  const char* name;
  const std::string CacheKeyFields::*entry;
  const std::string CurrentIdentity::*current;
};

constexpr Field k_identity_fields[] = {
    {"generator", &CacheKeyFields::generator_id, &CurrentIdentity::generator_id},
    {"argument ABI", &CacheKeyFields::abi_version, &CurrentIdentity::abi_version},
    {"cache layout", &CacheKeyFields::layout_version, &CurrentIdentity::layout_version},
    {"NVRTC", &CacheKeyFields::nvrtc_version, &CurrentIdentity::nvrtc_version},
    {"NVRTC build", &CacheKeyFields::nvrtc_build, &CurrentIdentity::nvrtc_build},
};

std::string days_text(std::int64_t seconds) {
  return fmt::format("{:.1f} days", static_cast<double>(seconds) / 86400.0);
}

} // namespace

std::optional<std::string> orphan_reason(const Manifest& m, const CurrentIdentity& current) {
  for (const Field& f : k_identity_fields) {
    const std::string& now = current.*(f.current);
    const std::string& then = m.key_fields.*(f.entry);
    if (!now.empty() && then != now) {
      return fmt::format("orphan: {} {} (now {})", f.name, then, now);
    }
  }
  return std::nullopt;
}

EvictionPlan plan_eviction(const std::vector<ListedEntry>& entries, const EvictionPolicy& policy,
                           const CurrentIdentity& current, std::int64_t now_unix) {
  EvictionPlan plan;
  plan.entries_before = entries.size();
  struct Kept {
    const ListedEntry* entry;
    bool orphan;
  };
  std::vector<Kept> kept;
  for (const ListedEntry& e : entries) {
    plan.bytes_before += e.bytes_on_disk;
    if (!e.manifest) {
      continue; // never chosen; counts toward the cap
    }
    const Manifest& m = *e.manifest;
    const std::optional<std::string> orphan = orphan_reason(m, current);
    EvictionCandidate c{e.dir, m.key, e.bytes_on_disk, m.last_used_unix, {}};
    if (policy.orphans && orphan) {
      c.reason = *orphan;
    } else if (policy.older_than_s && now_unix - m.last_used_unix > *policy.older_than_s) {
      c.reason = fmt::format("unused for {}", days_text(now_unix - m.last_used_unix));
    } else {
      kept.push_back({&e, orphan.has_value()});
      continue;
    }
    plan.victims.push_back(std::move(c));
  }
  std::uint64_t total = plan.bytes_before;
  for (const EvictionCandidate& v : plan.victims) {
    total -= v.bytes;
  }
  if (policy.max_bytes && total > *policy.max_bytes) {
    std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) {
      if (a.orphan != b.orphan) {
        return a.orphan;
      }
      const Manifest& ma = *a.entry->manifest;
      const Manifest& mb = *b.entry->manifest;
      return ma.last_used_unix != mb.last_used_unix ? ma.last_used_unix < mb.last_used_unix : ma.key < mb.key;
    });
    for (const Kept& k : kept) {
      if (total <= *policy.max_bytes) {
        break;
      }
      const Manifest& m = *k.entry->manifest;
      plan.victims.push_back({k.entry->dir, m.key, k.entry->bytes_on_disk, m.last_used_unix,
                              k.orphan ? *orphan_reason(m, current) + ", over the cap"
                                       : fmt::format("over the cap, least recently used ({} ago)",
                                                     days_text(now_unix - m.last_used_unix))});
      total -= k.entry->bytes_on_disk;
    }
  }
  plan.bytes_after = total;
  return plan;
}

EvictionResult apply_eviction(const CacheLayout& layout, const std::optional<std::string>& lock_dir,
                              const EvictionPlan& plan) {
  namespace fs = std::filesystem;
  EvictionResult result;
  std::error_code ec;
  fs::create_directories(layout.tmp_dir(), ec);
  int serial = 0;
  for (const EvictionCandidate& v : plan.victims) {
    FileLock lock;
    if (lock_dir) {
      LockAttempt attempt = acquire_file_lock(fmt::format("{}/{}.lock", *lock_dir, v.key), std::chrono::milliseconds(0));
      if (attempt.outcome != LockOutcome::acquired) {
        result.skipped.emplace_back(v, attempt.outcome == LockOutcome::timed_out
                                           ? "another process is building or publishing it"
                                           : fmt::format("cannot lock it (errno {})", attempt.error));
        continue;
      }
      lock = std::move(attempt.lock);
    }
    const std::string trash =
        fmt::format("{}/evicted-{}-{}-{}", layout.tmp_dir(), v.key.substr(0, 16), static_cast<long>(::getpid()), serial++);
    if (std::rename(v.dir.c_str(), trash.c_str()) != 0) {
      result.skipped.emplace_back(v, fmt::format("cannot move it aside: {}", std::strerror(errno)));
      continue;
    }
    fs::remove_all(trash, ec);
    result.removed.push_back(v);
  }
  return result;
}

std::uint64_t max_bytes_from_environment(const WarningSink& warnings) {
  const char* v = std::getenv("KDAJIT_MAX_BYTES");
  if (v == nullptr || *v == '\0') {
    return k_default_max_bytes;
  }
  if (const std::optional<std::uint64_t> cap = parse_byte_size(v)) {
    return *cap;
  }
  warn_once(CacheWarning::bad_max_bytes, warnings,
            fmt::format("KDAJIT_MAX_BYTES='{}' is not a byte count (digits with an optional K, M or G, at most 1 EiB): "
                        "the default cap of {} bytes applies",
                        v, k_default_max_bytes));
  return k_default_max_bytes;
}

std::size_t collect_over_cap(const std::string& root, const std::optional<std::string>& lock_dir,
                             const CurrentIdentity& current, std::uint64_t max_bytes, std::int64_t now_unix) {
  FileLock gc_lock;
  if (lock_dir) {
    LockAttempt attempt = acquire_file_lock(*lock_dir + "/gc.lock", std::chrono::milliseconds(0));
    if (attempt.outcome != LockOutcome::acquired) {
      return 0; // another process is collecting
    }
    gc_lock = std::move(attempt.lock);
  }
  EvictionPolicy policy;
  policy.max_bytes = max_bytes;
  const EvictionPlan plan = plan_eviction(list_entries(root), policy, current, now_unix);
  if (plan.victims.empty()) {
    return 0;
  }
  return apply_eviction(CacheLayout(root), lock_dir, plan).removed.size();
}

std::optional<std::uint64_t> parse_byte_size(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::uint64_t scale = 1;
  std::string digits = text;
  switch (text.back()) {
  case 'K':
  case 'k':
    scale = 1ull << 10;
    break;
  case 'M':
  case 'm':
    scale = 1ull << 20;
    break;
  case 'G':
  case 'g':
    scale = 1ull << 30;
    break;
  default:
    break;
  }
  if (scale != 1) {
    digits.pop_back();
  }
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      digits.size() > 19) {
    return std::nullopt;
  }
  const std::uint64_t count = std::stoull(digits); // < 10^19 < 2^64
  if (count > k_max_byte_size / scale) {
    return std::nullopt; // above the limit, never wrapped around to a small cap
  }
  return count * scale;
}

} // namespace kda::cache
