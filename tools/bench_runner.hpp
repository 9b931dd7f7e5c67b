/// \file
/// What `kdajit bench` and `kdajit tune` share: random device inputs for a
/// workload (filled from a device-side pool of normal values), the call's
/// arguments, and timing with CUDA events (median of N calls after warm-up).
#pragma once

#include "runtime/cuda_driver.hpp"
#include "kdajit/kda.hpp"
#include "tools/bench_workloads.hpp"

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace kda::tools {

struct DeviceBytes {
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;
  explicit DeviceBytes(std::size_t n);
  ~DeviceBytes();
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* data() const { return reinterpret_cast<void*>(ptr); }
};

/// Random bf16 N(0, 1) values on the device; tensors are filled from it at
/// rotating offsets (device-to-device copies), so large inputs are quick to make.
class RandomPool {
public:
  RandomPool(std::uint64_t seed, std::size_t elements);
  void fill_normal_bf16(void* dst, std::size_t elements);

private:
  DeviceBytes m_normal_bf16;
  std::size_t m_elements;
  std::mt19937_64 m_rng;
};

struct CallBuffers {
  std::unique_ptr<DeviceBytes> q, k, v, g, beta, state, out, checkpoints;
};

/// The serving-engine features a bench call uses (kdajit bench --pool,
/// --pool-slots, --checkpoint-every): a state pool (twice the sequences'
/// slots, or `pool_slots`) with the sequences spread over it in reverse
/// order, native checkpoints.
struct CallFeatures {
  bool pool = false;
  std::int64_t pool_slots = 0; ///< 0: twice the sequences
  std::int64_t checkpoint_every = 0;
  bool no_state = false; ///< calls without an initial state and without a final state
};

struct Workload;
/// The state pool's slots of a workload (its sequences without a pool).
std::int64_t state_slots(const Workload& wl);

struct Workload {
  const BenchWorkload* w = nullptr;
  std::int64_t tokens = 0;
  int seqs = 0;
  CallFeatures features;
  std::int64_t checkpoint_rows = 0;
  std::unique_ptr<DeviceBytes> a_log, dt_bias, cu, slots, checkpoint_starts;
  std::vector<CallBuffers> sets; ///< one (warm L2) or several rotated (cold L2)
};

Workload make_workload(const BenchWorkload& w, RandomPool& pool, int sets, std::mt19937_64& rng,
                       const CallFeatures& features = {});

/// The call on buffer set `b` (packed layout when the workload has several sequences).
PrefillArgs args_for(const Workload& wl, const CallBuffers& b);

struct Timing {
  double median_ms = 0.0;
  double min_ms = 0.0;
  std::string schedule; ///< "<schedule> on <target>"
  /// Why the prepare kernel ran beside the recurrence, with the lead it took
  /// ("on: 108 of 256 chunks per pair prepared first, ..."); empty when it did not.
  std::string prepare_overlap;
};

/// How the timed calls are made: recurrent_kda_prefill; PrefillPlan::run
/// (one plan, a workspace per buffer set); or a CUDA graph of one planned
/// run per buffer set, replayed.
enum class CallPath { eager, planned, graph };

/// Median and minimum of `iters` calls after `warmup`, each timed with CUDA
/// events; with `profile_range`, the timed calls between cuProfilerStart and
/// cuProfilerStop (a range for a profiler's range replay).
Timing time_calls(const Workload& wl, int warmup, int iters, const PrefillOptions& options = {},
                  CallPath path = CallPath::eager, bool profile_range = false);

/// Host time of one call: the least of five loops of `calls` calls enqueued
/// one after another on the path (the kernel ready; a context
/// synchronisation after each loop), and the least of five more with
/// the driver calls metered (runtime::set_driver_metering): how many a call
/// makes, and the time it spends outside them (kdajit's own work; the
/// meter's own clock reads taken off). The arguments are built before the
/// loop, as an engine holds its own.
struct HostTime {
  double us = 0.0;             ///< per call
  double driver_calls = 0.0;   ///< per call
  double outside_driver_us = 0.0; ///< per call
  /// per call, metered: from the call's start until its first enqueue (a
  /// launch, memset, event record or stream wait) has returned, the time in
  /// which the GPU has nothing of the call yet
  double until_first_enqueue_us = 0.0;
};
HostTime host_time_per_call(const Workload& wl, int calls, const PrefillOptions& options, CallPath path);

/// Milliseconds per call of `calls` calls enqueued back to back between two
/// CUDA events (after `warmup` calls): each call's host time before its first
/// launch runs while the GPU works on the call before, so the figure is the
/// GPU's time per call. A diagnostic beside time_calls, not the peers' setting.
double time_back_to_back(const Workload& wl, int warmup, int calls, const PrefillOptions& options = {});

} // namespace kda::tools
