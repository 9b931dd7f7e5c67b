/// \file
/// Eviction of committed cache entries (cache-and-jit.md 6.5): which entries
/// go, decided from their manifests alone (plan_eviction, pure), and removing
/// them without ever touching an entry another process is building or
/// publishing (apply_eviction).
///
/// Policy, applied in this order:
///   orphans      every entry of another generator, argument ABI, cache
///                layout or NVRTC than the current ones (a field of the
///                current identity left empty is not compared)
///   older_than   every entry not used for longer than this (last_used_unix,
///                which hits refresh at most daily: never atime)
///   max_bytes    then, while the entries left exceed the cap: orphans first,
///                then least recently used first (ties: the key)
/// Entries whose manifest does not parse are never chosen (`kdajit cache
/// verify` reports them); their bytes count toward the cap.
#pragma once

#include "cache/entry_io.hpp"
#include "cache/list_entries.hpp"
#include "cache/warnings.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kda::cache {

/// The default size cap (KDAJIT_MAX_BYTES overrides it).
inline constexpr std::uint64_t k_default_max_bytes = 2ull << 30;

struct CurrentIdentity {
  std::string layout_version;
  std::string abi_version;
  std::string generator_id;
  std::string nvrtc_version;
  std::string nvrtc_build;
};

struct EvictionPolicy {
  std::optional<std::uint64_t> max_bytes;
  std::optional<std::int64_t> older_than_s;
  bool orphans = false;
};

struct EvictionCandidate {
  std::string dir;
  std::string key;
  std::uint64_t bytes = 0;
  std::int64_t last_used_unix = 0;
  std::string reason; ///< "orphan: generator ...", "unused for 12 days", "over the cap, least recently used"
};

struct EvictionPlan {
  std::vector<EvictionCandidate> victims; ///< in the order they go
  std::uint64_t bytes_before = 0;         ///< every entry, readable or not
  std::uint64_t bytes_after = 0;
  std::size_t entries_before = 0;
};

/// Why `manifest` belongs to another generator or toolchain, or nullopt.
std::optional<std::string> orphan_reason(const Manifest& manifest, const CurrentIdentity& current);

EvictionPlan plan_eviction(const std::vector<ListedEntry>& entries, const EvictionPolicy& policy,
                           const CurrentIdentity& current, std::int64_t now_unix);

struct EvictionResult {
  std::vector<EvictionCandidate> removed;
  std::vector<std::pair<EvictionCandidate, std::string>> skipped; ///< with the reason (locked, I/O error)
};

/// Removes the plan's victims: for each, a non-blocking try of the key's
/// cross-process lock (the one a process holds while it builds and publishes
/// that key; skipped when held), then a rename into `<root>/v1/tmp` and a
/// recursive delete there, so a reader never sees a half-deleted entry.
/// `lock_dir`: the cache's lock directory (nullopt: no locks in use).
EvictionResult apply_eviction(const CacheLayout& layout, const std::optional<std::string>& lock_dir,
                              const EvictionPlan& plan);

/// The size cap in effect: KDAJIT_MAX_BYTES when it parses, else the default
/// (a value that does not parse is reported once to `warnings`).
std::uint64_t max_bytes_from_environment(const WarningSink& warnings = stderr_warning_sink());

/// Opportunistic collection (cache-and-jit.md 6.5): when another process
/// holds `<lock_dir>/gc.lock` it returns at once; otherwise it evicts down to
/// the cap (orphans first, then least recently used) with apply_eviction's
/// per-key safety. Returns how many entries it removed.
std::size_t collect_over_cap(const std::string& root, const std::optional<std::string>& lock_dir,
                             const CurrentIdentity& current, std::uint64_t max_bytes, std::int64_t now_unix);

/// The largest byte count parse_byte_size accepts (1 EiB).
inline constexpr std::uint64_t k_max_byte_size = 1ull << 60;

/// A byte count with an optional K, M or G suffix (powers of 1,024): "512M",
/// "2G", "1048576"; nullopt when it is not one or exceeds k_max_byte_size
/// (KDAJIT_MAX_BYTES, --max-bytes).
std::optional<std::uint64_t> parse_byte_size(const std::string& text);

} // namespace kda::cache
