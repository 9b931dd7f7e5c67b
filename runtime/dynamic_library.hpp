/// \file
/// A shared library opened with dlopen, kept open for the life of the process
/// (NVRTC and the CUDA driver are never unloaded: objects they own may outlive
/// any static destructor order we could choose).
#pragma once

#include <string>
#include <vector>

namespace kda::runtime {

class DynamicLibrary {
public:
  /// Tries each candidate in order (a file name for the loader's search path,
  /// or an absolute path) and keeps the first that opens. On failure `path()`
  /// is empty and `errors()` has one "candidate: dlerror text" line per try.
  static DynamicLibrary open_first(const std::vector<std::string>& candidates);

  bool is_open() const { return m_handle != nullptr; }
  const std::string& path() const { return m_path; }
  const std::vector<std::string>& errors() const { return m_errors; }

  /// The address of `name`, or nullptr when the library does not export it.
  void* symbol(const char* name) const;

  /// "a: why; b: why" for messages.
  std::string joined_errors() const;

private:
  void* m_handle = nullptr;
  std::string m_path;
  std::vector<std::string> m_errors;
};

} // namespace kda::runtime
