#include "cache/entry_io.hpp"

#include "cache/posix_io.hpp"
#include "cache/sha256.hpp"
#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

namespace kda::cache {
namespace {

std::atomic<unsigned> g_unique_counter{0};

// Removes a staging directory unless committed.
class StagingDir {
public:
  explicit StagingDir(std::string path) : m_path(std::move(path)) {}
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir() {
    if (!m_committed) {
      remove_tree_quietly(m_path);
    }
  }
  const std::string& path() const { return m_path; }
  void committed() { m_committed = true; }

private:
  std::string m_path;
  bool m_committed = false;
};

std::string make_staging_dir(const CacheLayout& layout, const CacheKey& key) {
  std::string pattern = fmt::format("{}/{}-XXXXXX", layout.tmp_dir(), key.short_id());
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw_io_error("cannot create staging directory", pattern, errno);
  }
  return pattern;
}

void fsync_directory_quietly(const std::string& path) {
  try {
    fsync_directory(path);
  } catch (const CacheError&) {
    // The entry is committed and visible; only its durability across a power
    // loss is in doubt, and a lost entry is rebuilt.
  }
}

LookupResult miss(MissReason reason, std::string detail) {
  LookupResult out;
  out.miss = reason;
  out.detail = std::move(detail);
  return out;
}

} // namespace

std::string CacheLayout::entries_dir() const {
  return fmt::format("{}/{}/entries", m_root, k_layout_dir);
}

std::string CacheLayout::tmp_dir() const {
  return fmt::format("{}/{}/tmp", m_root, k_layout_dir);
}

std::string CacheLayout::shard_dir(const CacheKey& key) const {
  return fmt::format("{}/{}", entries_dir(), key.shard());
}

std::string CacheLayout::entry_dir(const CacheKey& key) const {
  return fmt::format("{}/{}", shard_dir(key), key.hex());
}

// A manifest is a few KiB; more is not one.
constexpr std::uint64_t k_max_manifest_bytes = 1 << 20;

LookupResult read_entry(const std::string& entry_dir, const CacheKey& key) {
  // a symlink or a file where the entry directory belongs is a bad entry (and
  // quarantined), never followed and never a reason to recompile every run
  if (struct stat st {}; ::lstat(entry_dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return miss(MissReason::corrupt_manifest,
                fmt::format("{} is not a directory ({})", entry_dir, S_ISLNK(st.st_mode) ? "a symlink" : "a file"));
  }
  const std::string manifest_path = entry_dir + "/" + k_manifest_file;
  const ReadResult text = try_read_file(manifest_path, k_max_manifest_bytes);
  if (text.error == ENOENT || text.error == ENOTDIR) {
    return miss(MissReason::not_found, fmt::format("no {}", manifest_path));
  }
  if (!text.ok()) {
    return miss(MissReason::corrupt_manifest, fmt::format("cannot read {}: {}", manifest_path, text.what()));
  }
  ManifestParse parsed = parse_manifest(bytes_as_string(text.bytes));
  if (!parsed.manifest) {
    return miss(parsed.failure, fmt::format("{}: {}", manifest_path, parsed.message));
  }
  const Manifest& m = *parsed.manifest;
  if (m.key != key.hex()) {
    return miss(MissReason::key_mismatch, fmt::format("{}: key {} differs from the requested key {}", manifest_path,
                                                      m.key, key.hex()));
  }
  if (const CacheKey recomputed = make_cache_key(m.key_fields); recomputed.hex() != m.key) {
    return miss(MissReason::key_mismatch,
                fmt::format("{}: key_fields hash to {}, not to the recorded key", manifest_path, recomputed.hex()));
  }
  return read_entry_cubin(entry_dir, std::move(*parsed.manifest));
}

LookupResult read_entry_cubin(const std::string& entry_dir, Manifest manifest) {
  const std::string cubin_path = entry_dir + "/" + k_cubin_file;
  ReadResult cubin = try_read_file(cubin_path);
  if (!cubin.ok()) {
    return miss(MissReason::checksum_mismatch, fmt::format("cannot read {}: {}", cubin_path, cubin.what()));
  }
  if (cubin.bytes.size() != manifest.cubin_size) {
    return miss(MissReason::checksum_mismatch,
                fmt::format("{} has {} bytes, the manifest says {}", cubin_path, cubin.bytes.size(), manifest.cubin_size));
  }
  if (const std::string sha = sha256_hex(cubin.bytes); sha != manifest.cubin_sha256) {
    return miss(MissReason::checksum_mismatch,
                fmt::format("{} has sha256 {}, the manifest says {}", cubin_path, sha, manifest.cubin_sha256));
  }
  LookupResult out;
  out.entry = std::make_shared<const CacheEntry>(CacheEntry{std::move(manifest), std::move(cubin.bytes), entry_dir});
  return out;
}

CommitOutcome write_entry(const CacheLayout& layout, const CacheKey& key, const Manifest& manifest,
                          const Bytes& cubin, const std::optional<std::string>& source,
                          const std::optional<std::string>& log) {
  const std::string shard = layout.shard_dir(key);
  const std::string final_dir = layout.entry_dir(key);
  const std::string final_manifest = final_dir + "/" + k_manifest_file;
  if (path_exists(final_manifest)) {
    return CommitOutcome::kept_existing;
  }
  if (const int error = try_make_directory(shard, 0700); error != 0) {
    throw_io_error("cannot create entry directory", shard, error);
  }
  StagingDir staging(make_staging_dir(layout, key));
  write_new_file_synced(staging.path() + "/" + k_cubin_file, cubin);
  if (source) {
    write_new_file_synced(staging.path() + "/" + k_source_file, *source);
  }
  if (log) {
    write_new_file_synced(staging.path() + "/" + k_log_file, *log);
  }
  write_new_file_synced(staging.path() + "/" + k_manifest_file, serialize_manifest(manifest));
  fsync_directory(staging.path());

  for (int attempt = 0;; ++attempt) {
    if (::rename(staging.path().c_str(), final_dir.c_str()) == 0) {
      staging.committed();
      fsync_directory_quietly(shard);
      return CommitOutcome::committed;
    }
    const int error = errno;
    if (error != EEXIST && error != ENOTEMPTY) {
      throw CacheError(fmt::format("cannot rename {} to {}: {}", staging.path(), final_dir, errno_text(error)));
    }
    if (path_exists(final_manifest)) {
      return CommitOutcome::kept_existing; // another process committed first: keep theirs
    }
    if (attempt > 0) {
      throw CacheError(fmt::format("cannot commit {}: a directory without {} is in the way", final_dir,
                                   k_manifest_file));
    }
    quarantine_entry(final_dir); // a leftover without a manifest; then retry once
  }
}

std::optional<std::string> quarantine_entry(const std::string& entry_dir) {
  const std::string base = fmt::format("{}.corrupt-{}", entry_dir, static_cast<long long>(std::time(nullptr)));
  if (::rename(entry_dir.c_str(), base.c_str()) == 0) {
    return base;
  }
  if (errno != EEXIST && errno != ENOTEMPTY) {
    return std::nullopt;
  }
  const std::string unique = fmt::format("{}-{}-{}", base, ::getpid(), g_unique_counter.fetch_add(1));
  if (::rename(entry_dir.c_str(), unique.c_str()) == 0) {
    return unique;
  }
  return std::nullopt;
}

bool rewrite_manifest(const CacheLayout& layout, const std::string& entry_dir, const Manifest& manifest) {
  const std::string staged =
      fmt::format("{}/manifest-{}-{}.tmp", layout.tmp_dir(), ::getpid(), g_unique_counter.fetch_add(1));
  try {
    write_new_file_synced(staged, serialize_manifest(manifest));
  } catch (const CacheError&) {
    ::unlink(staged.c_str());
    return false;
  }
  const std::string target = entry_dir + "/" + k_manifest_file;
  if (::rename(staged.c_str(), target.c_str()) != 0) {
    ::unlink(staged.c_str());
    return false;
  }
  return true;
}

} // namespace kda::cache
