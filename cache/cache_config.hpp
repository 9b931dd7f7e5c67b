/// \file
/// Where the cache and its locks live, resolved once from the environment
/// (cache-and-jit.md 6.2). The only place the cache reads environment
/// variables is `CacheConfig::from_environment()`; `resolve_cache_config`
/// takes the values as a map so tests can inject them.
///
/// Cache root, first usable candidate:
///   KDAJIT_CACHE_DIR → $XDG_CACHE_HOME/kdajit → $HOME/.cache/kdajit
///   → ${TMPDIR:-/tmp}/kdajit-<uid> → memory only (one warning)
/// A candidate that cannot be created, is refused (foreign owner,
/// group/other-writable, not a directory) is skipped with its reason kept. A
/// candidate that exists, is ours but is not writable ends the search:
/// memory only, with one warning.
///
/// Locks (never under the cache root):
///   KDAJIT_LOCK=none → no cross-process locks (e.g. on NFS);
///   else KDAJIT_LOCK_DIR → $XDG_RUNTIME_DIR/kdajit-locks → /tmp/kdajit-locks-<uid>
///   → no locks (one warning).
/// KDAJIT_LOCK_TIMEOUT: seconds to wait for a per-key lock (default 120,
/// about 2 × a 60 s worst-case compile) before building privately.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kda::cache {

using EnvMap = std::map<std::string, std::string>;

/// One directory tried, where its path came from and what was found.
struct DirCandidate {
  std::string source; ///< e.g. "KDAJIT_CACHE_DIR", "$HOME/.cache/kdajit"
  std::string path;
  std::string verdict; ///< dir_verdict_name(), or "skipped"
  std::string reason;
};

inline constexpr std::chrono::milliseconds k_default_lock_timeout{120'000};

struct CacheConfig {
  std::optional<std::string> root; ///< nullopt: memory-only cache
  std::vector<DirCandidate> root_candidates;
  std::string memory_only_warning; ///< set when root is nullopt
  /// Set when KDAJIT_CACHE_DIR was set but refused and a later candidate is
  /// the root: an explicit choice is never replaced without a word.
  std::string fallback_warning;

  std::optional<std::string> lock_dir; ///< nullopt: no cross-process locks
  std::vector<DirCandidate> lock_candidates;
  std::string lock_note;    ///< why there are no locks
  std::string lock_warning; ///< set when locks were wanted but no directory is usable
  std::chrono::milliseconds lock_timeout = k_default_lock_timeout;

  std::vector<std::string> notes; ///< ignored or invalid values, e.g. a bad KDAJIT_LOCK_TIMEOUT

  /// The process environment, through resolve_cache_config.
  static CacheConfig from_environment();

  /// For `kdajit env`: every candidate with its verdict.
  nlohmann::json to_json() const;
};

/// Resolves (and creates, mode 0700) the cache and lock directories from
/// `env`. Creates `<root>/v1/entries` and `<root>/v1/tmp` for a usable root.
CacheConfig resolve_cache_config(const EnvMap& env);

/// The environment variables resolve_cache_config reads.
std::span<const std::string_view> cache_environment_variables();

} // namespace kda::cache
