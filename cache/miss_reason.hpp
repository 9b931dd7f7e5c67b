/// \file
/// Why a lookup did not return an entry. A miss is a value, never an
/// exception (architecture.md, error policy); each reason is also counted as
/// a Statistic. The name table in miss_reason.cpp must cover the enum
/// (static_assert).
#pragma once

#include "cache/cache_stats.hpp"

#include <string_view>

namespace kda::cache {

enum class MissReason {
  not_found,         ///< no committed entry (no manifest.json)
  corrupt_manifest,  ///< manifest.json unreadable, truncated, not JSON, or a field missing/mistyped
  checksum_mismatch, ///< kernel.cubin missing, or its size/sha256 differs from the manifest
  version_mismatch,  ///< manifest schema version differs from k_manifest_version
  key_mismatch,      ///< manifest key differs from the requested key or from its own fields
  memory_only,       ///< no disk cache (no usable directory)
  count_             // not a reason: the number of enumerators
};

inline constexpr std::size_t k_miss_reason_count = static_cast<std::size_t>(MissReason::count_);

/// "not_found", "corrupt_manifest", ...
std::string_view miss_reason_name(MissReason reason);

/// The statistic a miss of this reason increments.
Statistic miss_statistic(MissReason reason);

/// True for reasons that mean a bad entry on disk, which is quarantined.
bool is_bad_entry(MissReason reason);

} // namespace kda::cache
