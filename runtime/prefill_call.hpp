/// \file
/// The steps of one prefill call shared by the eager API (prefill.cpp) and
/// planned runs (prefill_plan.cpp): the device and route (memoised), the
/// prepared kernel, the workspace layout, the kernel argument values, and the
/// launches. Internal: not part of the public API.
#pragma once

#include "compiler/kernel_plan.hpp"
#include "runtime/arg_pack.hpp"
#include "runtime/check_args.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "kdajit/kda.hpp"
#include "kdajit/prefill_args.hpp"
#include "runtime/prepare_overlap.hpp"
#include "runtime/router.hpp"
#include "runtime/stream_workspace.hpp"

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kda {

struct KnownDevice {
  runtime::DeviceInfo info;
  DeviceDescription description;
};

struct CallSetup {
  ProblemShape problem;
  const RouteDecision* route = nullptr; ///< memoised (route_memo): never copied per call
  const KnownDevice* device = nullptr;
};

/// The device ordinal of a device pointer (cuPointerGetAttribute), nothing
/// for host or unknown memory.
std::optional<int> device_of_pointer(const void* p);

/// Checks the arguments (TensorError) and routes them on the current device.
CallSetup set_up_call(const PrefillArgs& args, const PrefillOptions& options);

/// The route of a call on a device, memoised by what decides it.
const RouteDecision& route_memo(const DeviceDescription& device, const ProblemShape& problem,
                                const PrefillOptions& options);

/// The routed schedule's kernel, compiled or found, and its module loaded in
/// the current context; lower_bound checked against the schedule first.
struct CallKernel {
  std::shared_ptr<const PreparedKernel> kernel;
  const runtime::LoadedModule* module = nullptr;
  KernelTier tier = KernelTier::routed;
  const KernelPlan& plan() const { return kernel->plan; }
};
CallKernel prepare_call_kernel(const CallSetup& setup, double lower_bound);

/// The same with the tiered JIT (PrefillOptions::tiered): the routed kernel
/// when it needs no compile; otherwise its build starts in the background
/// (runtime/background_compiles.hpp) and the call gets the LLVM tier's
/// token kernel (schedule token_llvm, routed for the same problem). Where
/// tier 0 cannot take the call (it is ineligible, or this build has no LLVM
/// tier) the call waits for the routed kernel, as without tiers.
CallKernel prepare_tiered_call_kernel(const CallSetup& setup, double lower_bound, const PrefillOptions& options);

/// Bytes of the workspace a call of `p` needs: the sequence table, the
/// records, the per-CTA scratch.
std::int64_t call_workspace_bytes(const KernelPlan& plan, const ProblemShape& p);

/// Where a call's results go and its workspace.
struct CallBuffers {
  const void* out = nullptr;
  const void* state_in = nullptr;
  void* state_out = nullptr;
  std::uint8_t* workspace = nullptr;
};

/// The argument values a call's shape decides (equal for every call of a
/// plan's signature): sizes, strides, gate scale, checkpoint interval.
ArgValues shape_values(const KernelPlan& plan, const ProblemShape& p, const PrefillArgs& args);

/// A TMA tensor map field of the ABI and the argument it maps.
struct TensorMapField {
  ArgSlot slot;
  const TensorRef PrefillArgs::*tensor = nullptr;
  std::string name; ///< "tma_q", for errors
};

/// The fields of a plan's ABI that may change from call to call of one
/// signature, resolved once (a plan keeps them; an eager call resolves them
/// per call).
struct CallFields {
  ArgSlot q, k, v, g, beta, a_log, dt_bias, out, state_in, state_out, cu_seqlens, chunk_offsets, workspace, scale;
  ArgSlot ready_flags, ready_epoch, chunk_begin, chunk_major; ///< the overlapped launch's
  ArgSlot state_indices, seq_order, checkpoints, checkpoint_starts;
  ArgSlot prepare_streams; ///< the split's (runtime/prepare_overlap)
  std::vector<TensorMapField> tensor_maps; ///< plans that load with TMA (KernelPlan::tile_tensor_maps)
  ArgSlot checkpoint_map; ///< plans that store checkpoint rows with TMA (KernelPlan::checkpoint_tensor_map)
  ArgSlot state_map;      ///< plans that move a bf16 state's tiles with TMA (KernelPlan::state_tensor_map)
};
CallFields call_fields(const KernelPlan& plan);

/// The values that may change from call to call of one signature: every
/// address, the workspace's, the q scale, the TMA tensor maps (the
/// sequential path's: no ready flags).
void set_call_values(ArgValues& values, const CallFields& fields, const KernelPlan& plan, const ProblemShape& p,
                     const PrefillArgs& args, const CallBuffers& buffers);

/// Every argument value of the plan's ABI for this call: shape_values, then
/// set_call_values.
ArgValues call_values(const KernelPlan& plan, const CallFields& fields, const ProblemShape& p, const PrefillArgs& args,
                      const CallBuffers& buffers);

/// One launch of a call with everything but the parameter struct resolved:
/// the loaded function, the grid of the call's shape, the block, the dynamic
/// shared memory and how it is ordered on its stream.
struct ResolvedLaunch {
  CUfunction function = nullptr;
  runtime::Dim3 grid;
  runtime::Dim3 block;
  unsigned dynamic_smem = 0;
  runtime::LaunchAttributes attributes;
};

/// The grid of entry `e` for a call of shape `p` on a device of `sm_count`
/// SMs (LaunchPlan::grid: a persistent grid takes as many CTAs as can be
/// resident, at most one per work item).
runtime::Dim3 grid_of(const EntryPlan& e, const ProblemShape& p, const KernelPlan& plan, int sm_count);

/// The sequential path's launches for a call of shape `p` on a device of
/// `sm_count` SMs (a persistent grid's size): every entry that launches, in
/// plan order, a programmatic one early where the kernel before it is the
/// call's. A plan resolves them once; an eager call per call.
std::vector<ResolvedLaunch> sequential_launches(const KernelPlan& plan, const runtime::LoadedModule& module,
                                                const ProblemShape& p, int sm_count);

/// The overlapped path's launches (runtime/prepare_overlap.hpp): the sequence
/// table kernels and the leading prepare on the caller's stream, the rest of
/// the chunks beside the recurrence, the recurrence on the side stream.
struct OverlappedLaunches {
  std::vector<ResolvedLaunch> tables;
  ResolvedLaunch lead_prepare; ///< the chunk-major overlap's (the split has none)
  ResolvedLaunch rest_prepare;
  ResolvedLaunch recurrence;
  std::int32_t lead_chunks = 0; ///< the rest's first local chunk
  std::int32_t streams = 0;     ///< the split: the recurrence's CTAs, whose items the rest walks (0: chunk-major)
  std::int64_t flag_count = 0;  ///< the call's ready flags (one per record), zeroed first where the channel asks and by the split
  runtime::SplitOrder split_order = runtime::SplitOrder::programmatic; ///< the split's launch order
};
OverlappedLaunches overlapped_launches(const KernelPlan& plan, const runtime::LoadedModule& module,
                                       const ProblemShape& p, const OverlapDecision& decision, int sm_count);

/// `launches` one after the other on `stream`, each with the values' struct.
void launch_sequential(const std::vector<ResolvedLaunch>& launches, const ArgValues& values, CUstream stream);

/// Whether and how the prepare kernel runs beside the recurrence.
OverlapDecision decide_overlap(const KernelPlan& plan, const runtime::LoadedModule& module, const CallSetup& s,
                               const PrefillOptions& options);

/// What an overlapped launch forks to and the flags it hands records over
/// with; the caller holds whatever lock makes the side stream and events its
/// own until the launch is enqueued.
struct OverlapChannel {
  CUstream side = nullptr;    ///< runs the recurrence
  CUevent prepared = nullptr; ///< recorded on the caller's stream after the leading prepare kernel
  CUevent finished = nullptr; ///< recorded on `side` after the recurrence
  ReadyFlags flags;           ///< one per record
  int priority = 0;           ///< `side`'s, given to the recurrence's launch
  /// false: no flag holds `flags.epoch` yet (an eager call's new epoch);
  /// true: they may (a planned run's constant epoch 1), and the launch zeroes
  /// them on the caller's stream first.
  bool zero_flags = false;
};

/// The overlapped launch; sets the overlap's values (ready flags, chunk
/// order and range) in `values`.
void launch_overlapped(const OverlappedLaunches& launches, const CallFields& fields, ArgValues& values,
                       CUstream stream, const OverlapChannel& channel);

/// Records of the workspace (the ready flags' count): an upper bound of the
/// chunks of all sequences x heads.
std::int64_t workspace_records(const KernelPlan& plan, const ProblemShape& p);

} // namespace kda
