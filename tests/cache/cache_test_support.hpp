/// \file
/// Helpers for the cache tests: a scratch directory per test (removed at the
/// end), sample key fields and built entries, and small file helpers.
#pragma once

#include "cache/cache_config.hpp"
#include "cache/cache_entry.hpp"
#include "cache/cache_key.hpp"

#include <string>

namespace kda::cache::test {

/// A fresh private directory under $TMPDIR (or /tmp), removed with
/// everything in it (permissions restored first) when the object dies.
class ScratchDir {
public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return m_path; }
  std::string operator/(const std::string& name) const { return m_path + "/" + name; }

private:
  std::string m_path;
  int m_owner_pid = 0; ///< a forked child never removes its parent's scratch directory
};

/// An environment whose cache and lock directories are inside `scratch`.
EnvMap scratch_env(const ScratchDir& scratch);

CacheKeyFields sample_fields();
CacheKey sample_key(const std::string& shape_key = "d128.bf16.bshd");

/// A built entry whose cubin is `cubin_text`, with one entry point.
BuiltEntry sample_built(const std::string& cubin_text = "\x7f" "ELF fake cubin bytes");

void write_text(const std::string& path, const std::string& text);
std::string read_text_file(const std::string& path);
bool exists(const std::string& path);
/// Names in `dir` (not . or ..), sorted.
std::vector<std::string> list_dir(const std::string& dir);

} // namespace kda::cache::test
