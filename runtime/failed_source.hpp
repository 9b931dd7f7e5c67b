/// \file
/// Writes a source NVRTC rejected, with its options and log, where a person can
/// recompile it. The file name is the label's stem plus a hash of the source and
/// options, so concurrent failures of one compile write one file and different
/// compiles never clash.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kda::runtime {

/// Writes `<dir>/<stem>-<hash><ext>` (the source) and the same name with
/// ".log" appended (options and log). Returns the source's path, or an empty
/// string when it cannot be written (the compile error is still reported).
std::string write_failed_source(const std::filesystem::path& dir, const std::string& label, const std::string& source,
                                const std::vector<std::string>& options, const std::string& log);

} // namespace kda::runtime
