#include "runtime/failed_source.hpp"

#include "cache/cache_dir.hpp"
#include "cache/posix_io.hpp"
#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
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

/// Writes a new temporary file (never an existing path or a symlink) and
/// renames it over `path` (a symlink there is replaced, not followed), so a
/// reader never sees a half-written file. The problem, or "".
std::string write_privately(const std::filesystem::path& path, const std::string& text) {
  static std::atomic<unsigned> s_counter{0};
  const std::string temporary =
      path.string() + fmt::format(".tmp.{}.{}", static_cast<long>(getpid()), s_counter.fetch_add(1));
  try {
    cache::write_new_file_synced(temporary, text);
  } catch (const CacheError& e) {
    return e.what();
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return fmt::format("cannot rename into {}: {}", path.string(), cache::errno_text(error));
  }
  return {};
}

/// The directory checked (and created) like the cache's: "" when private.
std::string private_dir_problem(const std::filesystem::path& dir) {
  const cache::DirCheck check = cache::prepare_private_dir(dir.string());
  if (check.verdict == cache::DirVerdict::usable) {
    return {};
  }
  return fmt::format("{}: {} ({})", dir.string(), check.reason, cache::dir_verdict_name(check.verdict));
}

} // namespace

std::filesystem::path default_failure_dir() {
  std::error_code error;
  std::filesystem::path base = std::filesystem::temp_directory_path(error);
  if (error) {
    base = "/tmp";
  }
  return base / fmt::format("kdajit-failed-sources-{}", static_cast<unsigned long>(::geteuid()));
}

FailedSource write_failed_source(const std::filesystem::path& dir, const std::string& label, const std::string& source,
                                 const std::vector<std::string>& options, const std::string& log) {
  if (std::string problem = private_dir_problem(dir); !problem.empty()) {
    return {{}, std::move(problem)};
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
  if (std::string problem = write_privately(source_path, source); !problem.empty()) {
    return {{}, std::move(problem)};
  }
  if (std::string problem = write_privately(source_path.string() + ".log", report); !problem.empty()) {
    return {{}, std::move(problem)};
  }
  return {source_path.string(), {}};
}

} // namespace kda::runtime
