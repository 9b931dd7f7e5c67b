/// \file
/// The error types of kdajit. The base `kda::Error` is never thrown itself;
/// each subclass names who must act: the schedule author (`ScheduleError`),
/// the caller passing tensors (`TensorError`), the toolchain (`ToolchainError`),
/// the cache's file system (`CacheError`), or kdajit itself (`InternalError`).
/// Messages follow LLVM style: lowercase, with context, no trailing period.
/// Public (installed as kdajit/errors.hpp): a caller catches these across the
/// shared library's boundary.
#pragma once

#include "kdajit/export.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace kda {

class KDA_API Error : public std::runtime_error {
protected:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// One problem found in a schedule: where (a JSON pointer) and what.
struct KDA_API Diagnostic {
  std::string json_path;
  std::string message;
  std::string to_string() const;
};

/// Every problem found in one schedule, reported at once.
class KDA_API ScheduleError : public Error {
public:
  /// Keeps identical diagnostics once and at most 100 of them, then one
  /// "and N more problems not listed".
  ScheduleError(std::string source, std::vector<Diagnostic> diagnostics);
  const std::string& source() const { return m_source; }
  const std::vector<Diagnostic>& diagnostics() const { return m_diagnostics; }

private:
  std::string m_source;
  std::vector<Diagnostic> m_diagnostics;
};

/// A tensor argument that does not match what the kernel needs.
class KDA_API TensorError : public Error {
public:
  TensorError(std::string argument, const std::string& message);
  const std::string& argument() const { return m_argument; }

private:
  std::string m_argument;
};

/// NVRTC or the driver failed; carries the log, the options and where the
/// failing source was written.
class KDA_API ToolchainError : public Error {
public:
  ToolchainError(const std::string& message, std::string log = {}, std::vector<std::string> options = {},
                 std::string source_path = {});
  const std::string& log() const { return m_log; }
  const std::vector<std::string>& options() const { return m_options; }
  const std::string& source_path() const { return m_source_path; }

private:
  std::string m_log;
  std::vector<std::string> m_options;
  std::string m_source_path;
};

/// File-system trouble in the cache (never a miss: a miss is a value).
class KDA_API CacheError : public Error {
public:
  explicit CacheError(const std::string& message) : Error(message) {}
};

/// A bug in kdajit.
class KDA_API InternalError : public Error {
public:
  explicit InternalError(const std::string& message) : Error(message) {}
};

} // namespace kda
