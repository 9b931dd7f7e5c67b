/// \file
/// What the cache hands out (CacheEntry), what a build callback hands in
/// (BuiltEntry), and what a lookup returns (LookupResult: an entry or a
/// MissReason, never an exception).
#pragma once

#include "cache/manifest.hpp"
#include "cache/miss_reason.hpp"
#include "cache/posix_io.hpp"

#include <memory>
#include <optional>
#include <string>

namespace kda::cache {

struct CacheEntry {
  Manifest manifest;
  Bytes cubin;
  std::string dir; ///< the entry directory on disk; empty for a memory-only entry
};

using CacheEntryPtr = std::shared_ptr<const CacheEntry>;

/// The result of a build callback. The cache completes the manifest before
/// publishing: key, key_fields, cubin_sha256, cubin_size, and (when zero)
/// created_unix, last_used_unix and compile_ms (the measured build time);
/// source_sha256 from `source` when given (a non-empty manifest value must
/// match it). The builder fills entry_points, launch and producer.
struct BuiltEntry {
  Manifest manifest;
  Bytes cubin;
  std::optional<std::string> source; ///< generated CUDA, stored as source.cu
  std::optional<std::string> log;    ///< NVRTC log, stored as compile.log
};

struct LookupResult {
  CacheEntryPtr entry;                     ///< set on a hit
  MissReason miss = MissReason::not_found; ///< why not, when `entry` is null
  std::string detail;                      ///< e.g. "kernel.cubin has 10 bytes, manifest says 12"

  bool hit() const { return entry != nullptr; }
};

} // namespace kda::cache
