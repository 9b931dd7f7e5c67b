/// \file
/// Helpers shared by the test files: repository paths and running the CLI
/// in-process.
#pragma once

#include <string>
#include <vector>

namespace kda::test {

/// Absolute path of a file in the source tree.
std::string source_path(const std::string& relative);

/// Reads a whole file; fails the test when it cannot.
std::string read_text(const std::string& path);

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `kdajit ARGS...` in-process.
CliRun run_kdajit(const std::vector<std::string>& args);

} // namespace kda::test
