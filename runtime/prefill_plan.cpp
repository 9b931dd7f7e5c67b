// kda::PrefillPlan (kdajit/kda.hpp): everything a call needs but its
// pointers, decided once; run() checks the call against it and launches.
#include "kdajit/kda.hpp"

#include "compiler/errors.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/overlap_streams.hpp"
#include "runtime/prefill_call.hpp"
#include "runtime/workspace_bindings.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <tuple>

namespace kda {

// A plan whose schedule runs its prepare kernel beside the recurrence keeps
// the ready flags in the caller's workspace, after the call's own bytes. Every
// run zeroes them on its stream before its kernels (a memset node in a
// graph; common/ready_flags), so every run, and every replay of a captured
// one, waits for the constant epoch 1 whatever the workspace held: nothing a
// graph freezes changes.
// Outside capture the recurrence goes through the context's overlap lane, as
// eager calls do; under capture through the plan's own side stream, which a
// capture keeps until it ends (so no other work may use it meanwhile).
struct CaptureLane {
  CUstream side = nullptr;
  int priority = 0;
  CUevent prepared = nullptr;
  CUevent finished = nullptr;
  std::mutex mutex; ///< held while a captured run forks to and joins `side`
};

struct PrefillPlan::State {
  CallSetup setup;      ///< the signature's shape and route
  ProblemShape problem; ///< a copy: the route memo owns setup.route
  CallKernel kernel;
  std::optional<ArgValues> shape_values; ///< the signature's; a run sets its own addresses on a copy
  CallFields fields;                     ///< where a run's addresses go
  void* context = nullptr;
  std::int64_t workspace_bytes = 0;
  OverlapDecision overlap;
  std::vector<ResolvedLaunch> sequential;  ///< the sequential path's launches
  std::optional<OverlappedLaunches> overlapped; ///< the overlapped path's, when it overlaps
  std::int64_t flags_offset = 0; ///< where the ready flags start in the workspace
  std::int64_t flag_count = 0;
  CaptureLane capture;
  ContextLane* lane = nullptr; ///< the context's overlap lane, for runs outside capture
  /// The workspace of the last run: bound to this plan until it is destroyed
  /// (WorkspaceBindings), so a run with it needs no lookup in the table.
  mutable std::atomic<const void*> bound_workspace{nullptr};
  std::string schedule;
  std::string target;

  ~State() {
    if (capture.side != nullptr && runtime::driver_status().available) {
      const runtime::DriverApi& api = runtime::driver_api();
      api.cuEventDestroy(capture.prepared);
      api.cuEventDestroy(capture.finished);
      api.cuStreamDestroy(capture.side);
    }
  }
};

namespace {

// The first field where a call's shape differs from the plan's signature
// (compared as values; text only for the message).
void require_signature(const ProblemShape& want, const ProblemShape& got) {
  auto differ = [](const char* what, const auto& a, const auto& b, auto text) {
    if (a != b) {
      throw TensorError("args", fmt::format("{} {} differs from the plan's {}: a PrefillPlan runs only calls of the "
                                            "signature it was made for",
                                            what, text(b), text(a)));
    }
  };
  const auto as_is = [](const auto& x) { return x; };
  const auto name = [](const auto& x) { return std::string(to_string(x)); };
  differ("layout", want.layout, got.layout, name);
  differ("B", want.batch, got.batch, as_is);
  differ("T", want.seq_len, got.seq_len, as_is);
  differ("heads", want.heads, got.heads, as_is);
  differ("sequences", want.num_seqs, got.num_seqs, as_is);
  differ("cu_seqlens int64", want.offsets_i64, got.offsets_i64, as_is);
  differ("beta token stride", want.beta_token_stride, got.beta_token_stride, as_is);
  differ("initial state", want.state_in, got.state_in, as_is);
  differ("state written", want.state_out, got.state_out, as_is);
  differ("state dtype", want.state_dtype, got.state_dtype, name);
  differ("state pool", want.state_pool, got.state_pool, as_is);
  differ("state slot pitch", want.state_slot_stride, got.state_slot_stride, as_is);
  differ("seq_order", want.seq_order, got.seq_order, as_is);
  differ("checkpoint interval", want.checkpoint_interval, got.checkpoint_interval, as_is);
  differ("lower_bound", want.lower_bound.value_or(0.0), got.lower_bound.value_or(0.0), as_is);
}

// The workspace must not share bytes with a tensor the kernels read or write.
void require_workspace_apart(const PrefillArgs& a, const void* workspace, std::int64_t bytes) {
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(workspace);
  const std::uintptr_t end = begin + static_cast<std::uintptr_t>(bytes);
  const std::array<NamedTensor, k_call_tensors> tensors = call_tensors(a);
  for (const auto& [name, t] : tensors) {
    if (t->defined() && begin < t->end_address() && t->begin_address() < end) {
      throw TensorError("workspace", fmt::format("bytes {:#x}..{:#x} overlap '{}'", begin, end, name));
    }
  }
}

} // namespace

PrefillPlan::PrefillPlan(const PrefillArgs& signature, const PrefillOptions& options) : m(std::make_unique<State>()) {
  m->context = runtime::ensure_current_context();
  m->setup = set_up_call(signature, options);
  m->problem = m->setup.problem;
  m->kernel = prepare_call_kernel(m->setup, signature.lower_bound);
  const KernelPlan& plan = m->kernel.plan();
  m->shape_values.emplace(shape_values(plan, m->problem, signature));
  m->fields = call_fields(plan);
  m->workspace_bytes = call_workspace_bytes(plan, m->problem);
  m->schedule = plan.schedule_name;
  m->target = plan.target.name;
  m->overlap = decide_overlap(plan, *m->kernel.module, m->setup, options);
  // also taken by an overlapping plan when another capture holds its side stream
  const int sm_count = m->setup.device->info.sm_count;
  m->sequential = sequential_launches(plan, *m->kernel.module, m->problem, sm_count);
  if (m->overlap.overlap) {
    m->overlapped = overlapped_launches(plan, *m->kernel.module, m->problem, m->overlap, sm_count);
    m->flags_offset = (m->workspace_bytes + 255) / 256 * 256;
    m->flag_count = workspace_records(plan, m->problem);
    m->workspace_bytes = m->flags_offset + m->flag_count * 4;
    m->lane = &context_overlap_lane(static_cast<CUcontext>(m->context)); // created now, not by a run
    m->capture.priority = greatest_stream_priority();
    KDA_CU(cuStreamCreateWithPriority, &m->capture.side, CU_STREAM_NON_BLOCKING, m->capture.priority);
    KDA_CU(cuEventCreate, &m->capture.prepared, CU_EVENT_DISABLE_TIMING);
    KDA_CU(cuEventCreate, &m->capture.finished, CU_EVENT_DISABLE_TIMING);
  }
}

PrefillPlan::~PrefillPlan() {
  if (m) {
    WorkspaceBindings::instance().unbind_all(m.get());
  }
}

PrefillPlan::PrefillPlan(PrefillPlan&&) noexcept = default;
PrefillPlan& PrefillPlan::operator=(PrefillPlan&& other) noexcept {
  if (this != &other) {
    if (m) {
      WorkspaceBindings::instance().unbind_all(m.get());
    }
    m = std::move(other.m);
  }
  return *this;
}

std::int64_t PrefillPlan::workspace_bytes() const {
  return m->workspace_bytes;
}

const std::string& PrefillPlan::schedule() const {
  return m->schedule;
}

const std::string& PrefillPlan::target() const {
  return m->target;
}

bool PrefillPlan::prepare_overlapped() const {
  return m->overlap.overlap;
}

const std::string& PrefillPlan::prepare_overlap_reason() const {
  return m->overlap.reason;
}

void PrefillPlan::run(const PrefillArgs& args, void* workspace, std::int64_t workspace_bytes) const {
  if (runtime::ensure_current_context() != m->context) {
    throw TensorError("args", "the current CUDA context is not the one the plan was made in");
  }
  const ProblemShape p = check_prefill_args(args, m->setup.device->info.ordinal, device_of_pointer);
  require_signature(m->problem, p);
  if (!args.out.defined()) {
    throw TensorError("out", "is required by PrefillPlan::run, which allocates nothing");
  }
  if (p.state_out && !p.state_in && !args.final_state.defined()) {
    throw TensorError("final_state", "is required by PrefillPlan::run with output_final_state and no initial "
                                     "state (run allocates nothing)");
  }
  if (workspace_bytes < m->workspace_bytes) {
    throw TensorError("workspace", fmt::format("{} bytes given, the plan needs {} (workspace_bytes())", workspace_bytes,
                                               m->workspace_bytes));
  }
  if (workspace == nullptr || reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0) {
    throw TensorError("workspace", fmt::format("{} is not a 16-byte aligned device pointer", workspace));
  }
  require_workspace_apart(args, workspace, m->workspace_bytes);
  if (workspace != m->bound_workspace.load(std::memory_order_relaxed)) {
    WorkspaceBindings::instance().bind(workspace, m.get(), m->schedule);
    m->bound_workspace.store(workspace, std::memory_order_relaxed);
  }
  CallBuffers buffers;
  buffers.out = args.out.data;
  buffers.state_in = p.state_in ? args.initial_state.data : nullptr;
  buffers.state_out = const_cast<void*>(p.state_in ? args.initial_state.data : p.state_out ? args.final_state.data
                                                                                           : nullptr);
  buffers.workspace = static_cast<std::uint8_t*>(workspace);
  const KernelPlan& plan = m->kernel.plan();
  // The signature's values copied into this thread's scratch struct, whose
  // storage a run reuses (copying into fresh ArgValues took two heap
  // allocations per run); run is not reentrant within a thread.
  thread_local std::optional<ArgValues> scratch;
  if (scratch) {
    *scratch = *m->shape_values;
  } else {
    scratch.emplace(*m->shape_values);
  }
  ArgValues& values = *scratch;
  set_call_values(values, m->fields, plan, p, args, buffers);
  const CUstream stream = static_cast<CUstream>(args.stream);
  if (!m->overlap.overlap) {
    launch_sequential(m->sequential, values, stream);
    return;
  }
  const ReadyFlags flags{reinterpret_cast<std::uint32_t*>(buffers.workspace + m->flags_offset), 1};
  if (!stream_is_capturing(stream)) {
    const OverlapLane lane = lock_overlap_lane(*m->lane);
    launch_overlapped(*m->overlapped, m->fields, values, stream,
                      OverlapChannel{lane.side, lane.prepared, lane.finished, flags, lane.priority, true});
    return;
  }
  std::lock_guard lock(m->capture.mutex);
  if (stream_is_capturing(m->capture.side)) {
    // another capture of this plan, not yet ended, holds the side stream
    launch_sequential(m->sequential, values, stream);
    return;
  }
  launch_overlapped(*m->overlapped, m->fields, values, stream,
                    OverlapChannel{m->capture.side, m->capture.prepared, m->capture.finished, flags,
                                   m->capture.priority, true});
}

} // namespace kda
