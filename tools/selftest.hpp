/// \file
/// `kdajit selftest`: each schedule a device has never verified (a family
/// never run on such hardware), or every schedule it can run (--all), checked
/// against the CPU fp64 reference in a child process with a time limit, the
/// result recorded in the local tuning table as a SelftestRecord; and what
/// `kdajit tune` runs first.
#pragma once

#include "runtime/router.hpp"
#include "runtime/tuning_table.hpp"
#include "tools/child_process.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace kda::tools {

/// The current GPU as routing sees it (CC, SM count, the NVRTC in use; makes
/// the context current).
DeviceDescription current_device_description();

/// One schedule on one target to self-test.
struct SelftestCandidate {
  const Schedule* schedule = nullptr;
  Target target;
};

/// The schedules `device` runs that are not verified on such hardware; with
/// `all`, every schedule with a generator it runs, and each schedule it cannot
/// run natively through its proxy (sm_90a_proxy for tcgen05, sm_120a_proxy for
/// a schedule listing sm_120a). `only`: that schedule alone.
std::vector<SelftestCandidate> selftest_candidates(const DeviceDescription& device, bool all,
                                                   const std::optional<std::string>& only);

/// What a child reports (its last stdout line, JSON) or why it failed.
struct SelftestOutcome {
  bool pass = false;
  std::string detail;
};

/// Reads a child's outcome: it must have exited 0 or 8 (a tolerance missed)
/// and printed {"pass": bool, "detail": string} as its last line; anything
/// else (a timeout, a signal, no or malformed output) is a failure saying so.
SelftestOutcome read_child_outcome(const ChildOutcome& child, int timeout_s);

/// Runs each candidate in a child (`kdajit selftest --child S --target T`)
/// and records the result in `table`; prints a line per candidate. Returns
/// the number that failed.
int run_selftests(const std::vector<SelftestCandidate>& candidates, const DeviceDescription& device,
                  int timeout_s, TuningTable& table, std::ostream& out);

} // namespace kda::tools
