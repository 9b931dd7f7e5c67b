/// \file
/// Reading an input file whole, safely: only a regular file (a directory,
/// FIFO, socket or device is refused without blocking on it) whose size is
/// within a limit checked before reading (an 8 GiB sparse file is refused,
/// not read).
#pragma once

#include <cstdint>
#include <string>

namespace kda {

/// The largest schedule, AOT plan or tuning table kdajit reads (16 MiB).
inline constexpr std::uint64_t k_max_input_file_bytes = 16ull << 20;

struct FileText {
  std::string text;
  std::string problem; ///< empty on success, e.g. "not a regular file (a FIFO)"
  int error = 0;       ///< the errno when open, fstat or read failed (problem is its text)
};

FileText read_regular_file(const std::string& path, std::uint64_t max_bytes = k_max_input_file_bytes);

} // namespace kda
