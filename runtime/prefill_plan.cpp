// kda::PrefillPlan (runtime/kda.hpp): everything a call needs but its
// pointers, decided once; run() checks the call against it and launches.
#include "runtime/kda.hpp"

#include "compiler/errors.hpp"
#include "runtime/context.hpp"
#include "runtime/prefill_call.hpp"
#include "runtime/workspace_bindings.hpp"

#include <fmt/format.h>

#include <array>
#include <tuple>

namespace kda {

struct PrefillPlan::State {
  CallSetup setup;      ///< the signature's shape and route
  ProblemShape problem; ///< a copy: the route memo owns setup.route
  CallKernel kernel;
  void* context = nullptr;
  std::int64_t workspace_bytes = 0;
  std::string schedule;
  std::string target;
};

namespace {

// The first field where a call's shape differs from the plan's signature.
void require_signature(const ProblemShape& want, const ProblemShape& got) {
  auto differ = [](const char* what, const auto& a, const auto& b) {
    if (a != b) {
      throw TensorError("args", fmt::format("{} {} differs from the plan's {}: a PrefillPlan runs only calls of the "
                                            "signature it was made for",
                                            what, b, a));
    }
  };
  differ("layout", std::string(to_string(want.layout)), std::string(to_string(got.layout)));
  differ("B", want.batch, got.batch);
  differ("T", want.seq_len, got.seq_len);
  differ("heads", want.heads, got.heads);
  differ("sequences", want.num_seqs, got.num_seqs);
  differ("cu_seqlens int64", want.offsets_i64, got.offsets_i64);
  differ("beta token stride", want.beta_token_stride, got.beta_token_stride);
  differ("initial state", want.state_in, got.state_in);
  differ("state written", want.state_out, got.state_out);
  differ("state dtype", std::string(to_string(want.state_dtype)), std::string(to_string(got.state_dtype)));
  differ("state pool", want.state_pool, got.state_pool);
  differ("state slot pitch", want.state_slot_stride, got.state_slot_stride);
  differ("seq_order", want.seq_order, got.seq_order);
  differ("checkpoint interval", want.checkpoint_interval, got.checkpoint_interval);
  differ("lower_bound", want.lower_bound.value_or(0.0), got.lower_bound.value_or(0.0));
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
  m->workspace_bytes = call_workspace_bytes(m->kernel.plan(), m->problem);
  m->schedule = m->kernel.plan().schedule_name;
  m->target = m->kernel.plan().target.name;
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
  WorkspaceBindings::instance().bind(workspace, m.get(), m->schedule);
  CallBuffers buffers;
  buffers.out = args.out.data;
  buffers.state_in = p.state_in ? args.initial_state.data : nullptr;
  buffers.state_out = const_cast<void*>(p.state_in ? args.initial_state.data : p.state_out ? args.final_state.data
                                                                                           : nullptr);
  buffers.workspace = static_cast<std::uint8_t*>(workspace);
  const KernelPlan& plan = m->kernel.plan();
  launch_sequential(plan, *m->kernel.module, p, call_values(plan, p, args, buffers), static_cast<CUstream>(args.stream));
}

} // namespace kda
