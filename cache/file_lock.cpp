#include "cache/file_lock.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace kda::cache {
namespace {

// 0: locked; EAGAIN: held by someone else; another errno: cannot lock.
int try_lock(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;
  fl.l_pid = 0;
  for (;;) {
#ifdef F_OFD_SETLK
    int rc = ::fcntl(fd, F_OFD_SETLK, &fl);
    if (rc != 0 && errno == EINVAL) {
      rc = ::fcntl(fd, F_SETLK, &fl); // kernel without OFD locks
    }
#else
    const int rc = ::fcntl(fd, F_SETLK, &fl);
#endif
    if (rc == 0) {
      return 0;
    }
    if (errno == EINTR) {
      continue;
    }
    return (errno == EACCES || errno == EAGAIN) ? EAGAIN : errno;
  }
}

} // namespace

FileLock::FileLock(FileLock&& other) noexcept : m_fd(other.m_fd) {
  other.m_fd = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = other.m_fd;
    other.m_fd = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  release();
}

void FileLock::release() {
  if (m_fd >= 0) {
    ::close(m_fd); // closing drops the lock
    m_fd = -1;
  }
}

LockAttempt acquire_file_lock(const std::string& path, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  LockAttempt attempt;
  const Clock::time_point start = Clock::now();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    attempt.error = errno;
    return attempt;
  }
  auto backoff = std::chrono::milliseconds(1);
  for (;;) {
    const int rc = try_lock(fd);
    attempt.waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (rc == 0) {
      attempt.outcome = LockOutcome::acquired;
      attempt.lock = FileLock(fd);
      return attempt;
    }
    if (rc != EAGAIN) {
      ::close(fd);
      attempt.error = rc;
      return attempt;
    }
    if (attempt.waited >= timeout) {
      ::close(fd);
      attempt.outcome = LockOutcome::timed_out;
      return attempt;
    }
    std::this_thread::sleep_for(std::min(backoff, timeout - attempt.waited));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
  }
}

} // namespace kda::cache
