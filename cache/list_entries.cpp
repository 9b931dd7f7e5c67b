#include "cache/list_entries.hpp"

#include "cache/entry_io.hpp"
#include "cache/posix_io.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kda::cache {

std::vector<ListedEntry> list_entries(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<ListedEntry> out;
  const fs::path entries = CacheLayout(root).entries_dir();
  std::error_code ec;
  for (const auto& shard : fs::directory_iterator(entries, ec)) {
    if (!shard.is_directory()) {
      continue;
    }
    for (const auto& entry : fs::directory_iterator(shard.path(), ec)) {
      if (entry.path().filename().string().find('.') == std::string::npos &&
          (entry.is_symlink() || !entry.is_directory())) {
        // listed so that gc and clear can remove it (never followed)
        out.push_back({entry.path().string(), std::nullopt,
                       entry.is_symlink() ? "not a directory (a symlink)" : "not a directory (a file)", 0});
        continue;
      }
      const fs::path manifest_path = entry.path() / k_manifest_file;
      if (!entry.is_directory() || entry.path().filename().string().find('.') != std::string::npos ||
          !fs::exists(manifest_path)) {
        continue;
      }
      ListedEntry listed;
      listed.dir = entry.path().string();
      std::ifstream in(manifest_path, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      ManifestParse parsed = parse_manifest(text.str());
      if (parsed.manifest) {
        listed.manifest = std::move(parsed.manifest);
      } else {
        listed.problem = parsed.message;
      }
      for (const auto& file : fs::directory_iterator(entry.path(), ec)) {
        listed.bytes_on_disk += file.is_regular_file() ? file.file_size() : 0;
      }
      out.push_back(std::move(listed));
    }
  }
  std::sort(out.begin(), out.end(), [](const ListedEntry& a, const ListedEntry& b) { return a.dir < b.dir; });
  return out;
}

} // namespace kda::cache
