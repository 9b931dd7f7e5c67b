#include "compiler/read_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kda {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

} // namespace

FileText read_regular_file(const std::string& path, std::uint64_t max_bytes) {
  FileText out;
  // O_NONBLOCK: opening a FIFO without a writer returns at once (then refused)
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    out.problem = std::strerror(out.error);
    return out;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    out.error = errno;
    out.problem = std::strerror(out.error);
  } else if (!S_ISREG(st.st_mode)) {
    out.problem = fmt::format("not a regular file ({})", kind_of(st.st_mode));
  } else if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    out.problem = fmt::format("{} bytes, more than the {} bytes kdajit reads", st.st_size, max_bytes);
  } else {
    out.text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < out.text.size()) {
      const ssize_t n = ::read(fd, out.text.data() + done, out.text.size() - done);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        out.error = errno;
        out.problem = std::strerror(out.error);
        break;
      }
      if (n == 0) {
        out.text.resize(done); // it shrank meanwhile
        break;
      }
      done += static_cast<std::size_t>(n);
    }
  }
  ::close(fd);
  if (!out.problem.empty()) {
    out.text.clear();
  }
  return out;
}

} // namespace kda
