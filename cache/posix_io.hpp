/// \file
/// Small POSIX file helpers for the cache: whole-file read, durable write,
/// directory fsync, mkdir with a mode, errno text. Functions named `try_*`
/// return an errno value (0: success); the others throw CacheError naming the
/// path and the errno text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kda::cache {

using Bytes = std::vector<std::uint8_t>;

/// strerror text for `error`, e.g. "Permission denied".
std::string errno_text(int error);

/// "<what> <path>: <errno text>" as a CacheError message.
[[noreturn]] void throw_io_error(std::string_view what, const std::string& path, int error);

struct ReadResult {
  int error = 0;       ///< 0, or the errno of the failed open/read
  std::string problem; ///< set when the file was refused: not a regular file, or larger than the limit
  Bytes bytes;

  bool ok() const { return error == 0 && problem.empty(); }
  /// The problem, or the errno's text.
  std::string what() const;
};

/// The largest cache file read whole (a cubin, a manifest, a bundle): 4 GiB.
inline constexpr std::uint64_t k_max_cache_file_bytes = 4ull << 30;

/// Reads a regular file of at most `max_bytes` (compiler/read_file.hpp: a
/// FIFO or device is refused without blocking on it, a larger file before
/// reading), as bytes with the errno of a failed open or read.
ReadResult try_read_file(const std::string& path, std::uint64_t max_bytes = k_max_cache_file_bytes);

/// Creates `path` (O_EXCL, O_NOFOLLOW: never an existing file or a symlink)
/// with mode 0600, writes `data` and fsyncs it.
void write_new_file_synced(const std::string& path, std::string_view data);
void write_new_file_synced(const std::string& path, const Bytes& data);

/// fsync of a directory, so that renames into it are durable.
void fsync_directory(const std::string& path);

/// mkdir with `mode`; an existing directory counts as success (0).
int try_make_directory(const std::string& path, unsigned mode);

/// mkdir -p: each missing component is created with `mode`.
int try_make_directories(const std::string& path, unsigned mode);

/// Removes a directory tree; errors are ignored (used for scratch cleanup).
void remove_tree_quietly(const std::string& path);

bool path_exists(const std::string& path);

std::string bytes_as_string(const Bytes& bytes);
Bytes string_as_bytes(std::string_view text);

} // namespace kda::cache
