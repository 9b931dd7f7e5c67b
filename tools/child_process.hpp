/// \file
/// Runs a command in a child process with a wall-clock limit and returns
/// what it wrote to stdout and how it ended, so that a caller survives a
/// child that hangs, crashes or leaves its CUDA context broken (`kdajit
/// selftest` runs each never-verified kernel this way).
#pragma once

#include <string>
#include <vector>

namespace kda::tools {

struct ChildOutcome {
  bool started = false;   ///< false: the command could not be run (see `error`)
  bool timed_out = false; ///< killed (SIGKILL) at the limit
  int exit_code = -1;     ///< when it exited
  int signal = 0;         ///< when a signal ended it (SIGKILL after a timeout included)
  std::string out;        ///< its stdout (stderr is the caller's)
  std::string error;      ///< why it could not be started

  bool exited_ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  /// "exit 3", "signal 11 (Segmentation fault)", "timed out after 300 s", ...
  std::string describe(int timeout_s) const;
};

/// Runs argv[0] (a path; not searched in PATH) with `argv`, waiting at most
/// `timeout_s` seconds.
ChildOutcome run_child(const std::vector<std::string>& argv, int timeout_s);

/// The running executable (/proc/self/exe).
std::string self_executable();

} // namespace kda::tools
