/// \file
/// Exit codes of every `kdajit` command (the README's table lists the same).
#pragma once

namespace kda::tools {

enum ExitCode : int {
  k_exit_ok = 0,               ///< success; every schedule checked is valid
  k_exit_invalid_schedule = 1, ///< a schedule failed to parse or validate (ScheduleError)
  k_exit_usage = 2,            ///< bad command line: unknown command or option, missing value, unknown target
  k_exit_io = 3,               ///< an input file cannot be read
  k_exit_toolchain = 4,        ///< NVRTC or the CUDA driver failed (ToolchainError)
  k_exit_cache = 5,            ///< cache I/O failed (CacheError)
  k_exit_tensor = 6,           ///< a bad call argument (TensorError)
  k_exit_no_device = 7,        ///< the command needs a GPU and none is usable
  k_exit_verification_failed = 8, ///< `verify`: the GPU result is outside the tolerances
  k_exit_not_found = 9,        ///< `cache show` / `cache explain`: no entry has that key
  k_exit_internal = 70,        ///< a bug in kdajit (InternalError or an unexpected exception)
};

} // namespace kda::tools
