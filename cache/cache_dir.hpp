/// \file
/// Checks one candidate directory for the cache or its locks: create it with
/// mode 0700 if missing, then refuse it if it is not a directory, is owned by
/// another user, or is group- or other-writable (anyone who can write it can
/// inject code); report it unwritable if this process cannot write it.
#pragma once

#include <string>
#include <string_view>

namespace kda::cache {

enum class DirVerdict {
  usable,      ///< ours, private, writable
  unwritable,  ///< exists and is ours, but not writable (e.g. mode 0500, read-only mount)
  refused,     ///< not a directory, foreign owner, group/other-writable, relative path
  uncreatable, ///< missing and mkdir failed
};

std::string_view dir_verdict_name(DirVerdict verdict);

struct DirCheck {
  DirVerdict verdict = DirVerdict::usable;
  std::string reason; ///< empty when usable, e.g. "group- or other-writable (mode 0770)"
};

DirCheck prepare_private_dir(const std::string& path);

} // namespace kda::cache
