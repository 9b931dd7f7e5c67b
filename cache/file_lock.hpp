/// \file
/// An exclusive fcntl lock on a lock file, waited for with a timeout.
///
/// Uses open-file-description locks (F_OFD_SETLK, Linux) where available, so
/// two DiskCache objects of one process exclude each other too; otherwise
/// classic POSIX record locks. The kernel drops the lock when the holder
/// exits, even on SIGKILL, so no stale lock survives a crash. Lock files are
/// never deleted (deleting one while another process waits on it would let
/// two holders in).
#pragma once

#include <chrono>
#include <string>

namespace kda::cache {

enum class LockOutcome { acquired, timed_out, failed };

struct LockAttempt;

/// Creates `path` (mode 0600) if needed and waits up to `timeout` for an
/// exclusive lock on it, polling with a short backoff. A zero timeout is a
/// single try.
LockAttempt acquire_file_lock(const std::string& path, std::chrono::milliseconds timeout);

class FileLock {
public:
  FileLock() = default;
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  bool held() const { return m_fd >= 0; }
  void release();

private:
  friend LockAttempt acquire_file_lock(const std::string& path, std::chrono::milliseconds timeout);
  explicit FileLock(int fd) : m_fd(fd) {}

  int m_fd = -1;
};

struct LockAttempt {
  LockOutcome outcome = LockOutcome::failed;
  FileLock lock;                     ///< held when outcome is acquired
  int error = 0;                     ///< errno when outcome is failed
  std::chrono::milliseconds waited{0};
};

} // namespace kda::cache
