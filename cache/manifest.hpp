/// \file
/// The manifest of a cache entry (`manifest.json`, written last: its presence
/// commits the entry). cache-and-jit.md 6.3.
///
/// Format, version k_manifest_version (bump it on any incompatible change;
/// added keys are tolerated by readers of the same version):
///
///   {
///     "manifest_version": 1,                  integer, must equal k_manifest_version
///     "key": "<64 hex>",                      make_cache_key(key_fields).hex()
///     "key_fields": {                         every key field, readable
///       "layout_version": str, "abi_version": str, "generator_id": str,
///       "schedule_id": str, "shape_key": str, "target": str,
///       "nvrtc_version": str, "options": [str, ...]
///     },
///     "source_sha256": "<64 hex>" | "",       sha256 of the generated CUDA ("" if unknown)
///     "cubin_sha256": "<64 hex>",             sha256 of kernel.cubin
///     "cubin_size": integer >= 0,             bytes in kernel.cubin
///     "entry_points": [ { "name": str (non-empty), "resources": object }, ... ],
///     "launch": object,                       block/cluster dims, dynamic smem, ABI (free form)
///     "compile_ms": number >= 0,
///     "producer": "jit" | "aot" | "import",
///     "created_unix": integer >= 0,
///     "last_used_unix": integer >= 0          refreshed at most once a day on a hit
///   }
#pragma once

#include "cache/cache_key.hpp"
#include "cache/miss_reason.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kda::cache {

inline constexpr int k_manifest_version = 1;

enum class Producer { jit, aot, imported };

/// "jit", "aot", "import".
std::string_view producer_name(Producer producer);
std::optional<Producer> parse_producer(std::string_view name);

struct EntryPoint {
  std::string name;                                    ///< `extern "C"` kernel name
  nlohmann::json resources = nlohmann::json::object(); ///< registers, smem, spills, ... (free form)

  bool operator==(const EntryPoint&) const = default;
};

struct Manifest {
  int manifest_version = k_manifest_version;
  std::string key;
  CacheKeyFields key_fields;
  std::string source_sha256;
  std::string cubin_sha256;
  std::uint64_t cubin_size = 0;
  std::vector<EntryPoint> entry_points;
  nlohmann::json launch = nlohmann::json::object();
  double compile_ms = 0;
  Producer producer = Producer::jit;
  std::int64_t created_unix = 0;
  std::int64_t last_used_unix = 0;

  bool operator==(const Manifest&) const = default;
};

nlohmann::json to_json(const Manifest& manifest);

/// The file text: pretty JSON with a trailing newline.
std::string serialize_manifest(const Manifest& manifest);

/// A manifest, or why there is none: `failure` is corrupt_manifest (missing or
/// mistyped field, bad value, not JSON) or version_mismatch.
struct ManifestParse {
  std::optional<Manifest> manifest;
  MissReason failure = MissReason::corrupt_manifest;
  std::string message; ///< e.g. "/cubin_size: expected a non-negative integer"
};

/// Never throws for bad input.
ManifestParse manifest_from_json(const nlohmann::json& json);
ManifestParse parse_manifest(std::string_view text);

} // namespace kda::cache
