/// \file
/// Which cache directory a `kdajit cache` subcommand works on: `--cache-dir
/// DIR`, else the one the environment resolves to (KDAJIT_CACHE_DIR, ...;
/// docs/cache.md). Locks always come from the environment.
#pragma once

#include "tools/args.hpp"

#include <optional>
#include <string>

namespace kda::tools {

struct CacheTarget {
  std::optional<std::string> root;     ///< nullopt: the cache is memory-only
  std::string memory_only_reason;
  std::optional<std::string> lock_dir; ///< nullopt: no cross-process locks
};

CacheTarget cache_target(const ParsedArgs& parsed);

} // namespace kda::tools
