#include "runtime/failed_source.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <system_error>

#include <unistd.h>

namespace kda::runtime {
namespace {

std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// Writes through a unique temporary name and renames, so a reader never sees
/// a half-written file even when two threads write the same path.
bool write_atomically(const std::filesystem::path& path, const std::string& text) {
  static std::atomic<unsigned> s_counter{0};
  const std::filesystem::path temporary =
      path.string() + fmt::format(".tmp.{}.{}", static_cast<long>(getpid()), s_counter.fetch_add(1));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.good()) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return false;
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    return false;
  }
  return true;
}

} // namespace

std::string write_failed_source(const std::filesystem::path& dir, const std::string& label, const std::string& source,
                                const std::vector<std::string>& options, const std::string& log) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return {};
  }
  const std::filesystem::path name = std::filesystem::path(label).filename();
  const std::string stem = name.stem().empty() ? std::string("kernel") : name.stem().string();
  const std::string extension = name.extension().empty() ? std::string(".cu") : name.extension().string();
  std::string report = "// options:";
  for (const std::string& option : options) {
    report += " " + option;
  }
  // The options are part of the name: one source failing on two targets gives two files.
  const std::filesystem::path source_path =
      dir / fmt::format("{}-{:016x}{}", stem, fnv1a64(report + "\n" + source), extension);
  report += "\n// log:\n" + log;
  if (!write_atomically(source_path, source) || !write_atomically(source_path.string() + ".log", report)) {
    return {};
  }
  return source_path.string();
}

} // namespace kda::runtime
