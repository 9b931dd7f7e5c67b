/// \file
/// Enumerating the committed entries of a cache root (for `kdajit cache ls`).
#pragma once

#include "cache/manifest.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kda::cache {

struct ListedEntry {
  std::string dir;
  std::optional<Manifest> manifest; ///< nullopt when the manifest does not parse
  std::string problem;              ///< why the manifest did not parse
  std::uint64_t bytes_on_disk = 0;  ///< all files of the entry
};

/// Every entry directory under `<root>/v1/entries` that holds a manifest,
/// and every symlink or file in an entry's place (with its problem), sorted
/// by name (quarantined and staging directories excluded).
std::vector<ListedEntry> list_entries(const std::string& root);

} // namespace kda::cache
