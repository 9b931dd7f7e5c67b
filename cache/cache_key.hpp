/// \file
/// The content-derived identity of a compiled kernel (cache-and-jit.md 6.1).
///
/// A key is SHA-256 over a canonical, length-prefixed encoding of the fields
/// below; the same fields always give the same key and changing any field
/// changes it. Only compile-time inputs are fields. Runtime values are NOT
/// fields and never enter the key: T, N, H, B, pointers, strides, SM count,
/// driver version, lower_bound and scale (lower_bound, the anchor derived
/// from it, and scale are kernel arguments). They drive kernel choice and the
/// runtime's in-memory plan table instead.
///
/// Encoding (all integers are unsigned 64-bit little-endian):
///
///   encoding := record("kdajit-cache-key", k_key_encoding_version as decimal)
///               record("layout_version", layout_version)
///               record("abi_version", abi_version)
///               record("generator_id", generator_id)
///               record("schedule_id", schedule_id)
///               record("shape_key", shape_key)
///               record("target", target)
///               record("nvrtc_version", nvrtc_version)
///               record("nvrtc_build", nvrtc_build)
///               record("source_sha256", source_sha256)
///               u64(len("options")) "options" u64(count) { u64(len(o)) o }*
///   record(name, value) := u64(len(name)) name u64(len(value)) value
///
/// Options are hashed in the order given (the caller normalizes them). Any
/// change to this encoding must bump k_key_encoding_version; the golden key in
/// tests/cache/test_cache_key.cpp fails on an unversioned change.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kda::cache {

inline constexpr int k_key_encoding_version = 2;

struct CacheKeyFields {
  std::string layout_version; ///< cache layout version
  std::string abi_version;    ///< launch/argument ABI version
  std::string generator_id;   ///< generator version + hash of its build and embedded templates
  std::string schedule_id;    ///< canonical_json_hash of the schedule
  std::string shape_key;      ///< compile-time specialization only (head dim, dtypes, layout, features)
  std::string target;         ///< literal arch string, e.g. "sm_100f"
  std::string nvrtc_version;  ///< NVRTC major.minor (which drivers load its cubins)
  /// The NVRTC library's build: its file's resolved name (libnvrtc.so.13.0.88)
  /// and size, so that a patch release never serves another's cubins.
  std::string nvrtc_build;
  /// SHA-256 of the emitted CUDA source: every change to lowering or
  /// emission that changes the code changes the key, whatever the version
  /// numbers say. Empty in the manifests of older kdajit builds.
  std::string source_sha256;
  std::vector<std::string> options; ///< normalized compile options, in order

  bool operator==(const CacheKeyFields&) const = default;
};

class CacheKey {
public:
  /// The 64 lowercase hex characters of the digest.
  const std::string& hex() const { return m_hex; }
  /// The first 16 hex characters: a readable label (logs, `kdajit cache ls`).
  std::string short_id() const { return m_hex.substr(0, 16); }
  /// The first 2 hex characters: the shard directory of the entry.
  std::string shard() const { return m_hex.substr(0, 2); }
  const CacheKeyFields& fields() const { return m_fields; }

  bool operator==(const CacheKey& other) const { return m_hex == other.m_hex; }

private:
  friend CacheKey make_cache_key(const CacheKeyFields& fields);
  CacheKey(std::string hex, CacheKeyFields fields) : m_hex(std::move(hex)), m_fields(std::move(fields)) {}

  std::string m_hex;
  CacheKeyFields m_fields;
};

/// The canonical byte encoding described above (exposed for tests and
/// `kdajit cache explain`).
std::string encode_cache_key_fields(const CacheKeyFields& fields);

CacheKey make_cache_key(const CacheKeyFields& fields);

/// SHA-256 of `value.dump()`: objects dump with sorted keys and no
/// whitespace, so equal JSON values hash equally whatever their key order in
/// the source file. Used for schedule ids.
std::string canonical_json_hash(const nlohmann::json& value);

} // namespace kda::cache
