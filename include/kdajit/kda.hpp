/// \file
/// kdajit's public C++ API: recurrent KDA prefill on the caller's stream in the
/// CUDA context current on the calling thread (device 0's primary context when
/// none is current). The first call for a (schedule, target, shape key)
/// compiles or loads the kernel; later calls only check arguments and launch.
#pragma once

#include "kdajit/errors.hpp"
#include "kdajit/export.h"
#include "kdajit/prefill_args.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace kda {

/// Device memory allocated by kdajit on a stream (an output or a final state
/// the caller did not provide). Released with `release()` or the destructor,
/// which frees it on the stream it was allocated on (stream-ordered).
class KDA_API DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(void* data, std::int64_t bytes, void* stream);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return m_data; }
  std::int64_t bytes() const { return m_bytes; }
  explicit operator bool() const { return m_data != nullptr; }
  /// Frees the memory now (stream-ordered on its allocation stream).
  void release();
  /// Gives up ownership; the caller frees the memory with cuMemFreeAsync.
  void* detach();

private:
  void* m_data = nullptr;
  std::int64_t m_bytes = 0;
  void* m_stream = nullptr;
};

/// Which kernel an eager call ran (PrefillOptions::tiered).
enum class KernelTier {
  routed, ///< the routed (or requested) schedule's kernel
  tier0,  ///< the LLVM tier's token kernel, while the routed one compiles
};

struct PrefillResult {
  void* out = nullptr;            ///< bf16 [B,T,H,128]: args.out, or owned_out's memory
  void* final_state = nullptr;    ///< the state written, or nullptr when none was
  DeviceBuffer owned_out;         ///< set when kdajit allocated the output
  DeviceBuffer owned_final_state; ///< set when kdajit allocated the final state (bf16)
  std::string schedule;           ///< which schedule ran
  std::string target;             ///< and for which target
  /// Whether the prepare kernel ran beside the recurrence (schedule
  /// `prepare_overlap`) and why (not); the results are the same either way.
  bool prepare_overlapped = false;
  std::string prepare_overlap_reason;
  KernelTier tier = KernelTier::routed;
};

/// Runs the prefill. Validates every argument before any launch (TensorError
/// names the argument with expected vs actual; at most 32,767 heads and
/// 2^31 - 1 sequences, the kernels' grid limits). An initial state is updated in
/// place even when output_final_state is false; without one, a final state is
/// written only when output_final_state is true (into args.final_state or an
/// allocated bf16 buffer). Eager only: a call while args.stream is being
/// captured into a CUDA graph is refused (TensorError on "stream"; capture
/// PrefillPlan::run instead). Throws ToolchainError, CacheError,
/// ScheduleError or InternalError for problems that are not the caller's
/// arguments.
KDA_API PrefillResult recurrent_kda_prefill(const PrefillArgs& args, const PrefillOptions& options = {});

/// A prefill planned once for one call signature and run many times: the
/// path for serving engines and CUDA-graph capture (docs/runtime.md, "Plan
/// and run"). The constructor checks `signature` (a real call: its tensors
/// are checked like recurrent_kda_prefill's), routes it, compiles or loads
/// the kernel and loads its module in the current context. run() then checks
/// a call against the signature and launches on args.stream, with no device
/// allocation, no host synchronisation, no compile and no host read of device
/// values, so it may be captured into a CUDA graph and replayed; between runs
/// (and replays) tensor and metadata contents may change at unchanged
/// addresses. Fixed by the plan: the layout, B and T (fixed) or the total
/// tokens and N (packed: pad with zero-length sequences), H, the dtypes,
/// strides, lower_bound, whether a state is read or written, the pool and
/// its slot pitch, seq_order or not, the checkpoint interval, the options.
/// A schedule with `prepare_overlap` runs its prepare kernel beside the
/// recurrence where the eager call would (decided once, for the signature;
/// prepare_overlapped()); its ready flags live in the workspace and every run
/// zeroes them on its stream before its kernels (a memset node in a captured
/// graph), so replays of a captured run need nothing from the host. Graph rules for
/// overlapped plans: instantiate with CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
/// (otherwise the recurrence loses its priority over the prepare kernel
/// beside it and a replay is as slow as a sequential run, with the same
/// results), and do not replay two graphs holding overlapped runs at the same
/// time on one device (each recurrence waits on its own prepare kernel, and
/// together they may hold every SM); make the plan with
/// PrefillOptions::prepare_overlap = false where they could be.
/// Thread safety: one plan may be run from several threads on different
/// streams, each with its own workspace.
class KDA_API PrefillPlan {
public:
  explicit PrefillPlan(const PrefillArgs& signature, const PrefillOptions& options = {});
  ~PrefillPlan();
  PrefillPlan(PrefillPlan&&) noexcept;
  PrefillPlan& operator=(PrefillPlan&&) noexcept;
  PrefillPlan(const PrefillPlan&) = delete;
  PrefillPlan& operator=(const PrefillPlan&) = delete;

  /// Bytes of the caller-owned workspace run() needs (device memory of the
  /// plan's context, 16-byte aligned).
  std::int64_t workspace_bytes() const;
  const std::string& schedule() const;
  const std::string& target() const;
  /// Whether runs take the prepare kernel beside the recurrence, and why (not).
  bool prepare_overlapped() const;
  const std::string& prepare_overlap_reason() const;

  /// Runs a call of the plan's signature (TensorError naming what differs
  /// otherwise). args.out is required (run allocates nothing), and so is
  /// args.final_state when output_final_state is set without an initial
  /// state. `workspace` is bound to this plan by its first run: a workspace
  /// still bound to another live plan is refused, as is one smaller than
  /// workspace_bytes() or overlapping a tensor of the call.
  void run(const PrefillArgs& args, void* workspace, std::int64_t workspace_bytes) const;

private:
  struct State;
  std::unique_ptr<State> m;
};

/// Why the router picks what it picks for this call, without running it.
KDA_API std::string explain_prefill_route(const PrefillArgs& args, const PrefillOptions& options = {});

/// Serves the kernels of a bundle (`kdajit aot build`) before the disk cache
/// and NVRTC, as KDAJIT_BUNDLE_PATH does at start-up. Entries of another
/// generator, argument ABI or cache layout are skipped with one warning on
/// stderr. Returns how many entries it registered; throws CacheError for an
/// unreadable, corrupt or truncated bundle.
KDA_API std::size_t register_kernel_bundle(const std::string& path);

/// The kernel cache directory this process uses (KDAJIT_CACHE_DIR, else
/// $XDG_CACHE_HOME/kdajit, else $HOME/.cache/kdajit: the first usable one),
/// or "" when no directory is usable and compiled kernels stay in memory.
KDA_API std::string kernel_cache_directory();

/// Adds a path to the NVRTC libraries tried after the loader's search path
/// (libnvrtc.so.13, libnvrtc.so.12) and before the build-time toolkit
/// directory; the Python package adds the nvidia-cuda-nvrtc wheels' libraries
/// this way. Takes effect only before NVRTC is first loaded (returns false
/// after that); KDAJIT_NVRTC_LIBRARY, when set, is still the only candidate.
KDA_API bool add_nvrtc_library_candidate(const std::string& path);

/// What this process compiles with and launches on: "CUDA driver 13.0
/// (libcuda.so.1), 1 device; NVRTC 13.0 (libnvrtc.so.13)" or the reasons
/// either is unavailable. Never throws.
KDA_API std::string toolchain_summary();

} // namespace kda
