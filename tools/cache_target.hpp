/// \file
/// Which cache directory a `kdajit cache` subcommand works on: `--cache-dir
/// DIR`, else the one the environment resolves to (KDAJIT_CACHE_DIR, ...;
/// docs/cache.md). Locks always come from the environment.
#pragma once

#include "tools/args.hpp"

#include <optional>
#include <ostream>
#include <string>

namespace kda::tools {

struct CacheTarget {
  std::optional<std::string> root;     ///< nullopt: the cache is memory-only
  std::string memory_only_reason;
  std::optional<std::string> lock_dir; ///< nullopt: no cross-process locks
};

CacheTarget cache_target(const ParsedArgs& parsed);

/// For a memory-only cache: says so (as JSON with `json`), with `nothing_to`
/// ("collect", "clear", ...), and returns true; false when there is a root.
bool report_memory_only(const CacheTarget& target, bool json, const char* nothing_to, std::ostream& out);

} // namespace kda::tools
