/// \file
/// A kdajit bundle (`.kdab`): compiled kernels shipped as one file, so that a
/// request is served without NVRTC (cache-and-jit.md 6.7; issue 6). Written by
/// `kdajit aot build`, read by the runtime (registered bundles are searched
/// after the in-memory table and before the disk cache).
///
/// Format, version k_bundle_format_version. Grammar (integers little-endian):
///
///   bundle   := magic index_size index padding payload
///   magic    := "KDAJITB1"                       8 bytes
///   index_size := u64                            bytes of `index`
///   index    := UTF-8 JSON object (below), exactly index_size bytes
///   padding  := 0x00 bytes up to a multiple of 16 from the file start
///   payload  := the cubins, each starting at a multiple of 16 from the
///               payload start, in index order, 0x00 padding between them
///
///   index := {
///     "format_version": 2,                       must equal k_bundle_format_version
///     "generator_id": str, "abi_version": str,   what built every entry
///     "layout_version": str, "nvrtc_version": str, "nvrtc_build": str,
///     "entries": [ {
///       "offset": int,                           the cubin: payload bytes [offset, offset + cubin_size)
///       "manifest": { ... }                      the entry's manifest (manifest.hpp): key, key fields,
///                                                cubin_sha256, cubin_size, entry points, launch,
///                                                producer "aot"
///     }, ... ]
///   }
///
/// Any change to this layout or to the index keys must bump
/// k_bundle_format_version; tests/cache/test_bundle.cpp pins the bytes of a
/// small bundle (a golden SHA-256) and fails on an unversioned change.
/// Reading checks the magic, the sizes, the JSON, every entry's fields, that
/// each cubin lies inside the payload and, when an entry is taken, its
/// SHA-256: a corrupt or truncated bundle is refused with a CacheError saying
/// where.
#pragma once

#include "cache/cache_key.hpp"
#include "cache/manifest.hpp"
#include "cache/posix_io.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kda::cache {

inline constexpr int k_bundle_format_version = 2;
inline constexpr char k_bundle_magic[9] = "KDAJITB1";

struct BundleEntry {
  Manifest manifest;        ///< key, key fields, cubin size and SHA-256, entry points, launch
  std::uint64_t offset = 0; ///< of the cubin in the payload
};

struct BundleIdentity {
  std::string generator_id;
  std::string abi_version;
  std::string layout_version;
  std::string nvrtc_version;
  std::string nvrtc_build;
};

/// What `write_bundle` takes: one cubin per entry (key fields, entry points,
/// launch as in the entry's manifest).
struct BundleInput {
  CacheKeyFields key_fields;
  std::vector<EntryPoint> entry_points;
  nlohmann::json launch = nlohmann::json::object();
  Bytes cubin;
};

/// The bundle's bytes (deterministic: same inputs, same bytes).
Bytes encode_bundle(const BundleIdentity& identity, const std::vector<BundleInput>& entries);

class Bundle {
public:
  /// Parses `bytes` (the whole file); throws CacheError naming `source` and
  /// what is wrong.
  static Bundle decode(Bytes bytes, const std::string& source);
  /// Reads and decodes a file.
  static Bundle read(const std::string& path);

  const std::string& source() const { return m_source; }
  const BundleIdentity& identity() const { return m_identity; }
  const std::vector<BundleEntry>& entries() const { return m_entries; }
  const BundleEntry* find(const std::string& key) const;
  /// The entry's cubin, its SHA-256 checked (CacheError when it differs).
  Bytes cubin(const BundleEntry& entry) const;

private:
  std::string m_source;
  BundleIdentity m_identity;
  std::vector<BundleEntry> m_entries;
  Bytes m_bytes;
  std::uint64_t m_payload = 0; ///< where the payload starts in m_bytes
};

} // namespace kda::cache
