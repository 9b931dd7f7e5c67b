/// \file
/// The on-disk layout of the cache and the atomic operations on one entry.
/// Readers never lock; writers stage everything in a private directory and
/// commit it with one rename, so a reader sees a whole entry or none.
///
/// Layout (k_layout_dir is "v1"; bump it on an incompatible layout change):
///
///   <root>/v1/entries/<key[0:2]>/<key>/        a committed entry
///       kernel.cubin                            the cubin bytes
///       source.cu                               optional: the generated CUDA
///       compile.log                             optional: the NVRTC log
///       manifest.json                           written last: the commit marker (manifest.hpp)
///   <root>/v1/entries/<key[0:2]>/<key>.corrupt-<unix time>[-<pid>-<n>]
///                                               a quarantined entry (bad manifest or cubin)
///   <root>/v1/tmp/<key[0:16]>-XXXXXX/           a publish being staged
///   <root>/v1/tmp/manifest-<pid>-<n>.tmp        a manifest being rewritten (last_used_unix)
///
/// An entry directory without manifest.json is not an entry (lookup reports
/// not_found). Publish writes kernel.cubin, source.cu, compile.log and then
/// manifest.json into the staging directory, fsyncs each file and the
/// directory, and renames the directory to <key>. If <key> already holds a
/// manifest, another process committed first: its entry is kept and ours is
/// discarded. A <key> directory without a manifest (left by hand or by an old
/// writer) is quarantined and the rename retried once.
#pragma once

#include "cache/cache_entry.hpp"
#include "cache/cache_key.hpp"

#include <optional>
#include <string>

namespace kda::cache {

inline constexpr const char* k_layout_dir = "v1";
inline constexpr const char* k_cubin_file = "kernel.cubin";
inline constexpr const char* k_source_file = "source.cu";
inline constexpr const char* k_log_file = "compile.log";
inline constexpr const char* k_manifest_file = "manifest.json";

class CacheLayout {
public:
  explicit CacheLayout(std::string root) : m_root(std::move(root)) {}

  const std::string& root() const { return m_root; }
  std::string entries_dir() const;
  std::string tmp_dir() const;
  std::string shard_dir(const CacheKey& key) const;
  std::string entry_dir(const CacheKey& key) const;

private:
  std::string m_root;
};

/// Reads and checks the entry in `entry_dir` for `key`: manifest present and
/// valid, schema version, key (and the hash of its fields), cubin size and
/// sha256. Never throws for a bad entry; does not quarantine.
LookupResult read_entry(const std::string& entry_dir, const CacheKey& key);

/// Reads the cubin of the entry in `entry_dir` and checks its size and sha256
/// against `manifest`: the cubin, or a miss (checksum_mismatch) with the
/// detail. The part of read_entry that needs no key, for an entry whose key
/// this build cannot recompute (one written by a kdajit build with another
/// key encoding).
LookupResult read_entry_cubin(const std::string& entry_dir, Manifest manifest);

enum class CommitOutcome { committed, kept_existing };

/// Stages and commits one entry (see the header comment). `manifest` must be
/// complete. Throws CacheError when the shard or staging directory cannot be
/// created or written, or the rename fails for another reason than an
/// existing entry.
CommitOutcome write_entry(const CacheLayout& layout, const CacheKey& key, const Manifest& manifest,
                          const Bytes& cubin, const std::optional<std::string>& source,
                          const std::optional<std::string>& log);

/// Renames `entry_dir` to `<entry_dir>.corrupt-<unix time>` (with a
/// `-<pid>-<n>` suffix if that exists). Returns the new path, or nothing when
/// the rename failed (e.g. another process moved it first).
std::optional<std::string> quarantine_entry(const std::string& entry_dir);

/// Atomically replaces `<entry_dir>/manifest.json` (staged in tmp_dir).
/// Returns false, leaving nothing behind, when that is not possible.
bool rewrite_manifest(const CacheLayout& layout, const std::string& entry_dir, const Manifest& manifest);

} // namespace kda::cache
