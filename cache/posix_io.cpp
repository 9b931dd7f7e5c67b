#include "cache/posix_io.hpp"

#include "compiler/errors.hpp"
#include "compiler/read_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace kda::cache {
namespace {

// Writes everything, retrying short writes and EINTR; returns errno or 0.
int write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

void write_new_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw_io_error("cannot create", path, errno);
  }
  int error = write_all(fd, data, size);
  const char* what = "cannot write";
  if (error == 0 && ::fsync(fd) != 0) {
    error = errno;
    what = "cannot fsync";
  }
  if (::close(fd) != 0 && error == 0) {
    error = errno;
    what = "cannot close";
  }
  if (error != 0) {
    throw_io_error(what, path, error);
  }
}

} // namespace

std::string errno_text(int error) {
  return std::strerror(error); // glibc returns a thread-safe static string for known codes
}

void throw_io_error(std::string_view what, const std::string& path, int error) {
  throw CacheError(fmt::format("{} {}: {}", what, path, errno_text(error)));
}

std::string ReadResult::what() const {
  return !problem.empty() ? problem : errno_text(error);
}

ReadResult try_read_file(const std::string& path, std::uint64_t max_bytes) {
  FileText file = read_regular_file(path, max_bytes);
  ReadResult out;
  if (file.error != 0) {
    out.error = file.error;
  } else if (!file.problem.empty()) {
    out.problem = std::move(file.problem);
  } else {
    out.bytes.assign(file.text.begin(), file.text.end());
  }
  return out;
}

void write_new_file_synced(const std::string& path, std::string_view data) {
  write_new_file(path, reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
}

void write_new_file_synced(const std::string& path, const Bytes& data) {
  write_new_file(path, data.data(), data.size());
}

void fsync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw_io_error("cannot open directory", path, errno);
  }
  // EINVAL: the file system does not support fsync on directories; nothing to do.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int error = errno;
    ::close(fd);
    throw_io_error("cannot fsync directory", path, error);
  }
  ::close(fd);
}

int try_make_directory(const std::string& path, unsigned mode) {
  if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) == 0) {
    return 0;
  }
  const int error = errno;
  struct stat st {};
  if (error == EEXIST && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return 0;
  }
  return error == EEXIST ? ENOTDIR : error;
}

int try_make_directories(const std::string& path, unsigned mode) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    struct stat st {};
    if (::stat(prefix.c_str(), &st) == 0) {
      continue;
    }
    if (const int error = try_make_directory(prefix, mode); error != 0) {
      return error;
    }
  }
  return try_make_directory(path, mode);
}

void remove_tree_quietly(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string bytes_as_string(const Bytes& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

Bytes string_as_bytes(std::string_view text) {
  return Bytes(text.begin(), text.end());
}

} // namespace kda::cache
