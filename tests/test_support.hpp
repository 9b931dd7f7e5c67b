/// \file
/// Helpers shared by the test files: repository paths, running the CLI
/// in-process, and recognising a cubin.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kda::test {

/// Absolute path of a file in the source tree.
std::string source_path(const std::string& relative);

/// The kdajit executable the tests run as a child process: $KDAJIT_CLI where
/// set (scripts/gpu-tests.sh points it at the build it runs, which may have
/// been unpacked away from the path this test binary was built at), else the
/// executable of this build.
std::string kdajit_binary();

/// Reads a whole file; fails the test when it cannot.
std::string read_text(const std::string& path);

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `kdajit ARGS...` in-process.
CliRun run_kdajit(const std::vector<std::string>& args);

/// An ELF image (a cubin) of more than `min_bytes` bytes.
inline bool is_elf(const std::vector<unsigned char>& bytes, std::size_t min_bytes = 4) {
  return bytes.size() > min_bytes && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

} // namespace kda::test
