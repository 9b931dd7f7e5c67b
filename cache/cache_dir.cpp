#include "cache/cache_dir.hpp"

#include "cache/posix_io.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace kda::cache {

std::string_view dir_verdict_name(DirVerdict verdict) {
  switch (verdict) {
  case DirVerdict::usable:
    return "usable";
  case DirVerdict::unwritable:
    return "unwritable";
  case DirVerdict::refused:
    return "refused";
  case DirVerdict::uncreatable:
    return "uncreatable";
  }
  return "refused";
}

DirCheck prepare_private_dir(const std::string& path) {
  if (path.empty() || path.front() != '/') {
    return {DirVerdict::refused, "not an absolute path"};
  }
  const uid_t uid = ::geteuid();
  struct stat link_st {};
  if (::lstat(path.c_str(), &link_st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) { // ENOTDIR: mkdir below says which component
      return {DirVerdict::uncreatable, fmt::format("cannot stat: {}", errno_text(errno))};
    }
    if (const int error = try_make_directories(path, 0700); error != 0) {
      return {DirVerdict::uncreatable, fmt::format("cannot create: {}", errno_text(error))};
    }
    ::chmod(path.c_str(), 0700); // in case the umask took owner bits away
    if (::lstat(path.c_str(), &link_st) != 0) {
      return {DirVerdict::uncreatable, fmt::format("cannot stat after creating: {}", errno_text(errno))};
    }
  }
  // A symlink is followed (users move ~/.cache elsewhere), but only one that
  // we or root own: in a shared /tmp someone else's link must not redirect us.
  if (S_ISLNK(link_st.st_mode) && link_st.st_uid != uid && link_st.st_uid != 0) {
    return {DirVerdict::refused, fmt::format("symlink owned by uid {}, not by uid {}", link_st.st_uid, uid)};
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return {DirVerdict::refused, fmt::format("cannot stat: {}", errno_text(errno))};
  }
  if (!S_ISDIR(st.st_mode)) {
    return {DirVerdict::refused, "not a directory"};
  }
  if (st.st_uid != uid) {
    return {DirVerdict::refused, fmt::format("owned by uid {}, not by uid {}", st.st_uid, uid)};
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return {DirVerdict::refused, fmt::format("group- or other-writable (mode {:04o})", st.st_mode & 07777)};
  }
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    return {DirVerdict::unwritable, fmt::format("not writable: {}", errno_text(errno))};
  }
  return {};
}

} // namespace kda::cache
