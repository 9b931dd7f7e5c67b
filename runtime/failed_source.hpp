/// \file
/// Writes a source NVRTC rejected, with its options and log, where a person can
/// recompile it. The file name is the label's stem plus a hash of the source and
/// options, so concurrent failures of one compile write one file and different
/// compiles never clash.
///
/// The directory must be private to this user (created mode 0700; refused when
/// another user owns it or can write it, or when it is another user's symlink:
/// cache::prepare_private_dir), and files are written through new temporary
/// names (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600) renamed into place, so
/// nobody else can point a write of ours at a file of their choosing.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kda::runtime {

struct FailedSource {
  std::string path;    ///< the source's path, or empty when it was not written
  std::string problem; ///< why not, e.g. "/tmp/x: group- or other-writable (mode 0777)"
};

/// Writes `<dir>/<stem>-<hash><ext>` (the source) and the same name with
/// ".log" appended (options and log). The compile error is reported either way.
FailedSource write_failed_source(const std::filesystem::path& dir, const std::string& label, const std::string& source,
                                 const std::vector<std::string>& options, const std::string& log);

/// `$TMPDIR/kdajit-failed-sources-<uid>` (/tmp without TMPDIR): per user,
/// in the shared temporary directory as the cache's last fallback is.
std::filesystem::path default_failure_dir();

} // namespace kda::runtime
