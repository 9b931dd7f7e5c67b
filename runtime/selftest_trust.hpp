/// \file
/// What `kdajit selftest` records and routing checks: the identity a
/// schedule's selftest result speaks for on the current device (device key,
/// driver, NVRTC, kdajit version, the SHA-256 of the schedule's emitted plain
/// source), and the SelftestTrust that routing asks before it takes a
/// schedule never run on such hardware (runtime/router.hpp).
#pragma once

#include "runtime/router.hpp"
#include "runtime/tuning_table.hpp"

#include <string>

namespace kda {

/// The environment a selftest result belongs to.
struct SelftestEnvironment {
  std::string device; ///< tuning_device_key
  int driver_version = 0;
  std::string nvrtc;  ///< "13.0"
};

/// The environment of `device` (its NVRTC version as routing sees it) with
/// this process's CUDA driver (version 0 without one).
SelftestEnvironment selftest_environment(const DeviceDescription& device);

/// The record identity of `schedule` on `target` in `env` (pass false, no
/// detail): lowers and emits the schedule's plain plan for its source hash
/// (the CUDA source, or an llvm-backend schedule's LLVM IR: a ToolchainError
/// without the LLVM tier).
SelftestRecord selftest_identity(const Schedule& schedule, const Target& target, const SelftestEnvironment& env);

/// Trust from the passing records of `table` (kept by reference: it must
/// outlive the result) for `env`. A schedule's source is hashed only when
/// the table holds a record of it for the device, and each (schedule,
/// target) is answered once: make a new trust after recording more results.
SelftestTrust selftest_trust(const TuningTable& table, const SelftestEnvironment& env);

} // namespace kda
