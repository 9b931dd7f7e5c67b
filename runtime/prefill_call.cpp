#include "runtime/prefill_call.hpp"

#include "compiler/errors.hpp"
#include "compiler/exponent_range.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/arg_pack.hpp"
#include "runtime/check_args.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/environment.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/overlap_streams.hpp"
#include "runtime/prepare_overlap.hpp"
#include "runtime/router.hpp"
#include "runtime/selftest_trust.hpp"
#include "runtime/stream_workspace.hpp"
#include "runtime/tensor_map_encoder.hpp"
#include "runtime/tuning_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <tuple>

namespace kda {
namespace {

const KnownDevice& describe_current_device() {
  static std::mutex mutex;
  static std::map<CUdevice, KnownDevice> known;
  const CUdevice device = runtime::current_device();
  std::lock_guard lock(mutex);
  auto it = known.find(device);
  if (it == known.end()) {
    KnownDevice k;
    k.info = runtime::current_device_info();
    k.description.cc_major = k.info.cc_major;
    k.description.cc_minor = k.info.cc_minor;
    k.description.sm_count = k.info.sm_count;
    try {
      const runtime::NvrtcVersion nvrtc = runtime::NvrtcCompiler().version();
      k.description.nvrtc_major = nvrtc.major;
      k.description.nvrtc_minor = nvrtc.minor;
    } catch (const ToolchainError&) {
      // no NVRTC (a bundle-only deployment): route as the toolkit this was built with would
      k.description.nvrtc_major = CUDA_VERSION / 1000;
      k.description.nvrtc_minor = (CUDA_VERSION % 1000) / 10;
    }
    it = known.emplace(device, std::move(k)).first;
  }
  return it->second; // std::map nodes are stable
}

// The measured kernel-choice table, read once per process.
const TuningTable& tuning_table() {
  static const TuningTable k_table = [] {
    const std::optional<std::string> path =
        tuning_table_path(KernelRegistry::instance().disk_cache().config().root);
    return routing_tuning_table(path);
  }();
  return k_table;
}



// The sequence table at the workspace's start: chunk offsets (N + 1 int32)
// and the packed layout's sequence order (N int32, common/sequences),
// rounded up to 256 bytes.
std::int64_t sequence_table_bytes(const ProblemShape& p) {
  const std::int64_t bytes = (2 * static_cast<std::int64_t>(p.num_seqs) + 1) * 4;
  return (bytes + 255) / 256 * 256;
}

// The TMA tensor maps of a plan that loads whole chunks with TMA
// (KernelPlan::tile_tensor_maps): each token tensor as [tokens][heads][128]
// bf16 rows, encoded by the driver per call (the addresses change). No
// tokens: zero maps, never read.
void set_tile_tensor_maps(const TileTensorMapPlan& maps, const std::vector<TensorMapField>& fields,
                          const KernelPlan& plan, const ProblemShape& p, const PrefillArgs& args, ArgValues& values) {
  for (const TensorMapField& f : fields) {
    if (p.total_tokens == 0) {
      values.set(f.slot, TensorMapValue{});
      continue;
    }
    const TensorMapRequest r = swizzled_rows_tensor_map(
        reinterpret_cast<std::uint64_t>((args.*f.tensor).data), TmaDataType::bf16,
        static_cast<std::uint64_t>(p.total_tokens), static_cast<std::uint64_t>(p.heads),
        static_cast<std::uint32_t>(plan.tiles.head_dim), static_cast<std::uint32_t>(maps.box_cols),
        static_cast<std::uint32_t>(maps.box_rows));
    values.set(f.slot, runtime::encode_tensor_map(r, f.name));
  }
}

// The TMA tensor map of a plan that stores checkpoint rows with TMA
// (KernelPlan::checkpoint_tensor_map): state_checkpoints [C, H, 128, 128] as
// C·H matrices of 128 value rows, encoded per call. A call without
// checkpoints: a zero map, never read (the kernel stores no rows).
void set_checkpoint_tensor_map(const CheckpointTensorMapPlan& map, ArgSlot slot, const KernelPlan& plan,
                               const PrefillArgs& args, ArgValues& values) {
  const TensorRef& c = args.state_checkpoints;
  if (!c.defined() || c.shape.empty() || c.shape[0] == 0) {
    values.set(slot, TensorMapValue{});
    return;
  }
  const auto d = static_cast<std::uint32_t>(plan.tiles.head_dim);
  const TensorMapRequest r = swizzled_matrix_stack_tensor_map(
      reinterpret_cast<std::uint64_t>(c.data), TmaDataType::bf16, static_cast<std::uint64_t>(c.shape[0] * c.shape[1]),
      d, d, static_cast<std::uint32_t>(map.box_cols), static_cast<std::uint32_t>(map.box_rows));
  values.set(slot, runtime::encode_tensor_map(r, "tma_checkpoints"));
}

// The TMA tensor map of a plan that moves a bf16 state's tiles with TMA
// (KernelPlan::state_tensor_map): the call's state memory, which its kernels
// read and update in place (the initial state or its pool; without one, the
// final state), as slots of [H x 128 value rows][128 keys] state_slot_stride
// elements apart, encoded per call. A call without a state: a zero map, never
// read.
void set_state_tensor_map(const StateTensorMapPlan& map, ArgSlot slot, const KernelPlan& plan, const ProblemShape& p,
                          const PrefillArgs& args, const CallBuffers& b, ArgValues& values) {
  const std::int64_t slots = p.state_pool ? args.initial_state.shape[0] : p.num_seqs;
  if (b.state_out == nullptr || slots == 0) {
    values.set(slot, TensorMapValue{});
    return;
  }
  const auto d = static_cast<std::uint32_t>(plan.tiles.head_dim);
  const TensorMapRequest r = swizzled_state_slots_tensor_map(
      reinterpret_cast<std::uint64_t>(b.state_out), TmaDataType::bf16, static_cast<std::uint64_t>(slots),
      static_cast<std::uint64_t>(p.heads), d, static_cast<std::uint64_t>(p.state_slot_stride),
      static_cast<std::uint32_t>(map.box_cols), static_cast<std::uint32_t>(map.box_rows));
  values.set(slot, runtime::encode_tensor_map(r, "tma_state"));
}

const EntryPlan* entry_with_role(const KernelPlan& plan, KernelRole role) {
  for (const EntryPlan& e : plan.entries) {
    if (e.role == role) {
      return &e;
    }
  }
  return nullptr;
}

KernelFootprint footprint_of(const EntryPlan& e, const runtime::LoadedModule& module) {
  const runtime::FunctionAttributes& a = module.function(e.entry_name).attributes;
  return {e.launch.threads, a.num_regs, a.shared_size_bytes + e.launch.dynamic_smem};
}

// A packed call's chunk_offsets kernel writes the sequence table; with at most
// k_warp_table_max_sequences sequences the kernels derive it in a warp
// (common/sequences) and the launch is skipped.
bool launches(const EntryPlan& e, const ProblemShape& p) {
  return e.role != KernelRole::sequence_table || p.num_seqs > k_warp_table_max_sequences;
}

// The entry's launch for a call of shape p, but for its parameter struct.
ResolvedLaunch resolve_launch(const runtime::LoadedModule& module, const EntryPlan& e, runtime::Dim3 grid,
                              const runtime::LaunchAttributes& attributes = {}) {
  ResolvedLaunch l;
  l.function = module.function(e.entry_name).function;
  l.grid = grid;
  l.block = {static_cast<unsigned>(e.launch.threads), 1, 1};
  l.dynamic_smem = static_cast<unsigned>(e.launch.dynamic_smem);
  l.attributes = attributes;
  return l;
}

// Every entry of a plan takes the same parameter struct (the plan's ABI), so
// a call packs it once per set of values and launches each entry with it.
void launch_resolved(const ResolvedLaunch& l, const std::vector<std::uint8_t>& params, CUstream stream) {
  void* kernel_args[] = {const_cast<std::uint8_t*>(params.data())}; // the driver copies the struct
  runtime::launch(l.function, l.grid, l.block, l.dynamic_smem, stream, kernel_args, l.attributes);
}

} // namespace

runtime::Dim3 grid_of(const EntryPlan& e, const ProblemShape& p, const KernelPlan& plan, int sm_count) {
  const std::int64_t chunk = plan.tiles.chunk_size;
  switch (e.launch.grid) {
  case GridRule::single_block:
    return {1, 1, 1};
  case GridRule::chunks_by_heads: {
    const std::int64_t chunks = p.layout == LayoutKind::fixed ? p.num_seqs * ((p.seq_len + chunk - 1) / chunk)
                                                              : p.total_tokens / chunk + p.num_seqs;
    const std::int64_t per_cta = e.launch.chunks_per_cta;
    return {static_cast<unsigned>((chunks + per_cta - 1) / per_cta), static_cast<unsigned>(p.heads), 1};
  }
  case GridRule::sequences_by_heads:
    return {static_cast<unsigned>(p.num_seqs), static_cast<unsigned>(p.heads * (128 / plan.tiles.m_tile)), 1};
  case GridRule::persistent_items: {
    const std::int64_t items = static_cast<std::int64_t>(p.num_seqs) * p.heads * (128 / plan.tiles.m_tile);
    const std::int64_t resident = static_cast<std::int64_t>(std::max(sm_count, 1)) * e.launch.ctas_per_sm;
    return {static_cast<unsigned>(std::clamp<std::int64_t>(items, 1, resident)), 1, 1};
  }
  }
  return {1, 1, 1};
}

// Route decisions are memoised by what decides them (a tuple, not a
// formatted string: this runs on every call's dispatch path).
using RouteMemoKey = std::tuple<int, int, int, int, int, int, int, bool, std::int64_t, std::string, double,
                                std::string, int, int, bool, bool, std::int64_t>;

const RouteDecision& route_memo(const DeviceDescription& d, const ProblemShape& p, const PrefillOptions& options) {
  static std::mutex mutex;
  static std::map<RouteMemoKey, RouteDecision> memo;
  const ShapeClass shape = shape_class(static_cast<std::int64_t>(p.num_seqs) * p.heads, d.sm_count,
                                       average_tokens(p.total_tokens, p.num_seqs));
  RouteMemoKey key{d.cc_major,
                   d.cc_minor,
                   d.sm_count,
                   d.nvrtc_major,
                   d.nvrtc_minor,
                   static_cast<int>(p.layout),
                   static_cast<int>(p.state_dtype),
                   p.state_in || p.state_out,
                   p.heads,
                   options.schedule.value_or(""),
                   p.lower_bound.value_or(0.0),
                   options.target.value_or(""),
                   static_cast<int>(shape),
                   options.family ? static_cast<int>(*options.family) : -1,
                   p.state_pool,
                   p.seq_order,
                   p.checkpoint_interval};
  std::lock_guard lock(mutex);
  auto it = memo.find(key);
  if (it == memo.end()) {
    it = memo.emplace(std::move(key),
                      route(available_schedules(), d, p,
                            RouteRequest{options.schedule, options.family, &tuning_table(), options.target,
                                         selftest_trust(tuning_table(), selftest_environment(d))}))
             .first;
  }
  return it->second;
}

// An upper bound of the chunks of all sequences x heads.
std::int64_t workspace_records(const KernelPlan& plan, const ProblemShape& p) {
  const std::int64_t chunk = plan.tiles.chunk_size;
  const std::int64_t chunks = p.layout == LayoutKind::fixed ? p.num_seqs * ((p.seq_len + chunk - 1) / chunk)
                                                            : p.total_tokens / chunk + p.num_seqs;
  return chunks * p.heads;
}

std::optional<int> device_of_pointer(const void* p) {
  int ordinal = -1;
  const CUresult r = runtime::driver_api().cuPointerGetAttribute(
      &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, reinterpret_cast<CUdeviceptr>(p));
  // Unregistered host memory has no device ordinal (the query fails); pinned
  // or managed memory reports the device that can access it, which the
  // kernels can read.
  if (r != CUDA_SUCCESS || ordinal < 0) {
    return std::nullopt;
  }
  return ordinal;
}

// Per device: what the router and the launcher need (queried once).
CallSetup set_up_call(const PrefillArgs& args, const PrefillOptions& options) {
  runtime::ensure_current_context();
  CallSetup s;
  s.device = &describe_current_device();
  s.problem = check_prefill_args(args, s.device->info.ordinal, device_of_pointer);
  s.route = &route_memo(s.device->description, s.problem, options);
  return s;
}

// The sequence table, the records, then per-CTA scratch of the recurrent grid
// (sequences x heads x row blocks: the tcgen05 proxy's TMEM images).
std::int64_t call_workspace_bytes(const KernelPlan& plan, const ProblemShape& p) {
  const std::int64_t ctas = static_cast<std::int64_t>(p.num_seqs) * p.heads * (128 / plan.tiles.m_tile);
  const std::int64_t records = plan.workspace.records_in_workspace ? workspace_records(plan, p) : 0;
  return sequence_table_bytes(p) + records * plan.workspace.record_bytes +
         ctas * plan.workspace.cta_scratch_bytes;
}

OverlapDecision decide_overlap(const KernelPlan& plan, const runtime::LoadedModule& module, const CallSetup& s,
                               const PrefillOptions& options) {
  const ProblemShape& p = s.problem;
  const EntryPlan* prepare = entry_with_role(plan, KernelRole::prepare);
  const EntryPlan* recurrence = entry_with_role(plan, KernelRole::recurrence);
  if (!plan.prepare_overlap || prepare == nullptr || recurrence == nullptr) {
    OverlapDecision none;
    none.reason = "the schedule has no prepare_overlap";
    return none;
  }
  const runtime::DeviceInfo& d = s.device->info;
  const std::int64_t chunk = plan.tiles.chunk_size;
  const std::int64_t sequences = p.num_seqs;
  OverlapRequest r;
  r.sm_count = d.sm_count;
  r.sm = {d.smem_per_sm, d.reserved_smem_per_block, d.registers_per_sm, d.max_threads_per_sm};
  r.prepare = footprint_of(*prepare, module);
  r.recurrence = footprint_of(*recurrence, module);
  r.pairs = sequences * p.heads;
  r.heads = p.heads;
  r.sequences = sequences;
  r.recurrence_ctas = r.pairs * (128 / plan.tiles.m_tile);
  if (p.layout == LayoutKind::fixed) {
    r.chunks_per_sequence = (p.seq_len + chunk - 1) / chunk;
    r.chunk_grid_extent = r.chunks_per_sequence;
  } else {
    r.chunks_per_sequence = sequences > 0 ? (p.total_tokens + chunk * sequences - 1) / (chunk * sequences) : 0;
    r.chunk_grid_extent = (p.total_tokens + chunk - 1) / chunk;
  }
  r.allowed = options.prepare_overlap;
  r.persistent = recurrence->launch.grid == GridRule::persistent_items;
  if (r.persistent && !plan.prepare_walks_items) {
    throw InternalError(fmt::format("plan {}: a persistent recurrence with prepare_overlap whose prepare kernel does "
                                    "not walk its items",
                                    plan.schedule_name));
  }
  // Measurement aid (docs/runtime.md): KDAJIT_PREPARE_STREAMS=R sets the
  // split's recurrence CTAs; read once per process.
  static const std::optional<int> k_streams = runtime::prepare_streams_from_environment();
  r.streams = k_streams;
  if (r.pairs == 0 || r.chunk_grid_extent == 0) {
    OverlapDecision none;
    none.reason = "off: no chunks";
    return none;
  }
  OverlapDecision decision = decide_prepare_overlap(*plan.prepare_overlap, r);
  // Measurement aid (docs/runtime.md): KDAJIT_PREPARE_LEAD=F replaces the
  // model's lead by F x the chunks per sequence (timing only, same results);
  // read once per process, not on every call's dispatch path.
  static const std::optional<double> k_lead_fraction = runtime::prepare_lead_from_environment();
  if (decision.overlap && decision.streams == 0 && k_lead_fraction) {
    const double fraction = *k_lead_fraction;
    decision.lead_chunks = std::clamp<std::int64_t>(static_cast<std::int64_t>(fraction * r.chunk_grid_extent), 1,
                                             r.chunk_grid_extent - 1);
    decision.reason += fmt::format(" (lead {} from KDAJIT_PREPARE_LEAD)", decision.lead_chunks);
  }
  // The split launches its recurrence first and its walk as a programmatic
  // dependent on the caller's stream; the measurement aid (docs/runtime.md)
  // KDAJIT_SPLIT_ORDER=streams puts them on two streams instead, =serial
  // runs the walk to its end before the recurrence. Where kernels may run one
  // at a time (CUDA_LAUNCH_BLOCKING=1, a profiler or sanitizer injected), the
  // programmatic order would run the recurrence alone, waiting for ever: the
  // split then takes the serial order unless KDAJIT_SPLIT_ORDER names one.
  // Read once per process.
  static const std::optional<runtime::SplitOrder> k_order = runtime::split_order_from_environment();
  static const bool k_one_at_a_time = runtime::kernels_may_run_one_at_a_time();
  if (decision.overlap && decision.streams > 0) {
    if (k_order) {
      decision.split_order = *k_order;
      if (*k_order != runtime::SplitOrder::programmatic) {
        decision.reason += fmt::format(" ({} order from KDAJIT_SPLIT_ORDER)",
                                       *k_order == runtime::SplitOrder::streams ? "streams" : "serial");
      }
    } else if (k_one_at_a_time) {
      decision.split_order = runtime::SplitOrder::serial;
      decision.reason += " (serial order: CUDA_LAUNCH_BLOCKING=1 or a tool injected, which may run kernels one at a time)";
    }
  }
  return decision;
}

OverlappedLaunches overlapped_launches(const KernelPlan& plan, const runtime::LoadedModule& module,
                                       const ProblemShape& p, const OverlapDecision& decision, int sm_count) {
  const EntryPlan* prepare = entry_with_role(plan, KernelRole::prepare);
  const EntryPlan* recurrence = entry_with_role(plan, KernelRole::recurrence);
  if (!decision.overlap || prepare == nullptr || recurrence == nullptr) {
    throw InternalError(fmt::format("plan {}: an overlapped launch without the overlap or its kernels",
                                    plan.schedule_name));
  }
  OverlappedLaunches l;
  for (const EntryPlan& e : plan.entries) {
    if (e.role == KernelRole::sequence_table && launches(e, p)) {
      l.tables.push_back(resolve_launch(module, e, grid_of(e, p, plan, sm_count)));
    }
  }
  auto prepare_grid = [&](std::int64_t count) {
    return runtime::Dim3{static_cast<unsigned>(p.heads), static_cast<unsigned>(p.num_seqs),
                         static_cast<unsigned>(count)};
  };
  l.lead_chunks = static_cast<std::int32_t>(decision.lead_chunks);
  l.flag_count = workspace_records(plan, p);
  if (decision.streams > 0) { // the split: R persistent recurrence CTAs, R x K prepare CTAs walking their items
    l.rest_prepare =
        resolve_launch(module, *prepare, runtime::Dim3{static_cast<unsigned>(decision.prepare_ctas), 1, 1});
    l.recurrence = resolve_launch(module, *recurrence, runtime::Dim3{static_cast<unsigned>(decision.streams), 1, 1});
    l.streams = decision.streams;
    l.split_order = decision.split_order;
    if (l.split_order == runtime::SplitOrder::programmatic) {
      l.rest_prepare.attributes.order = runtime::StreamOrder::programmatic;
    }
    return l;
  }
  l.lead_prepare = resolve_launch(module, *prepare, prepare_grid(decision.lead_chunks));
  l.rest_prepare = resolve_launch(module, *prepare, prepare_grid(decision.chunk_extent - decision.lead_chunks));
  l.recurrence = resolve_launch(module, *recurrence, grid_of(*recurrence, p, plan, sm_count));
  return l;
}

namespace {

// The split in programmatic order, after its ready flags are zeroed: the
// recurrence on the caller's stream, then the walk as its programmatic
// dependent, which starts once every recurrence CTA is resident (the
// recurrence allows it first thing), so the walk's CTAs take the other SMs.
// No side stream: the walk never waits, and the stream's later work is
// ordered after both grids (the GPU contract cases copy the results on the
// stream right after each call to check it).
//
// The serial order (a measurement aid, KDAJIT_SPLIT_ORDER=serial) puts the
// walk first, in plain stream order: it never waits, so it runs to its end,
// and the recurrence after it finds every record ready. The two kernels then
// take their own time, as a profiler that serializes kernels needs (in the
// programmatic order it would run the recurrence alone, waiting for ever).
void launch_split_on_caller_stream(const OverlappedLaunches& l, const CallFields& fields, ArgValues& values,
                                   CUstream stream) {
  values.set(fields.chunk_begin, l.lead_chunks).set(fields.chunk_major, std::int32_t{0});
  values.set(fields.prepare_streams, l.streams);
  const std::vector<std::uint8_t>& params = values.packed();
  if (l.split_order == runtime::SplitOrder::serial) {
    launch_resolved(l.rest_prepare, params, stream);
    launch_resolved(l.recurrence, params, stream);
    return;
  }
  launch_resolved(l.recurrence, params, stream);
  launch_resolved(l.rest_prepare, params, stream);
}

} // namespace

// The overlapped launch (runtime/prepare_overlap.hpp): chunk offsets, the
// ready flags zeroed where the channel asks (planned runs) or for the split,
// and the leading prepare kernel (the split: none) on the caller's stream;
// the recurrence on the side stream, forked after it; the rest of the chunks
// prepared beside it (the split: all of them, by the walk); the caller's
// stream joined to the side stream.
void launch_overlapped(const OverlappedLaunches& l, const CallFields& fields, ArgValues& values, CUstream stream,
                       const OverlapChannel& channel) {
  values.set(fields.ready_flags, static_cast<const void*>(channel.flags.flags));
  values.set(fields.ready_epoch, static_cast<std::int32_t>(channel.flags.epoch));
  values.set(fields.chunk_begin, std::int32_t{0});
  values.set(fields.chunk_major, std::int32_t{1});
  values.set(fields.prepare_streams, std::int32_t{0}); // the leading prepare takes its chunk from its grid
  const std::vector<std::uint8_t>& params = values.packed();
  for (const ResolvedLaunch& table : l.tables) {
    launch_resolved(table, params, stream);
  }
  if (channel.zero_flags || l.streams > 0) {
    // a planned run waits for the same epoch every time: no flag may hold it
    // from the run before (the split zeroes its flags in eager calls too)
    KDA_CU(cuMemsetD32Async, reinterpret_cast<CUdeviceptr>(channel.flags.flags), 0u,
           static_cast<std::size_t>(l.flag_count), stream);
  }
  if (l.streams > 0) {
    if (l.split_order != runtime::SplitOrder::streams) {
      launch_split_on_caller_stream(l, fields, values, stream);
      return;
    }
  } else {
    launch_resolved(l.lead_prepare, params, stream);
  }
  KDA_CU(cuEventRecord, channel.prepared, stream);
  // The rest of the chunks are enqueued before the recurrence that waits for
  // them, and nothing orders them after it: where kernels run one at a time
  // (CUDA_LAUNCH_BLOCKING, a sanitizer) every flag is set before the
  // recurrence starts; otherwise both start when the leading prepare ends.
  // (The driver copied the struct at each launch: changing it now is safe.)
  values.set(fields.chunk_begin, l.lead_chunks);
  if (l.streams > 0) { // the split: the walk over the recurrence CTAs' items, from chunk 0
    values.set(fields.chunk_major, std::int32_t{0}).set(fields.prepare_streams, l.streams);
  }
  launch_resolved(l.rest_prepare, params, stream);
  KDA_CU(cuStreamWaitEvent, channel.side, channel.prepared, 0u);
  // the side stream's priority, explicitly: a captured launch keeps it
  ResolvedLaunch recurrence = l.recurrence;
  recurrence.attributes.priority = channel.priority;
  launch_resolved(recurrence, params, channel.side);
  KDA_CU(cuEventRecord, channel.finished, channel.side);
  KDA_CU(cuStreamWaitEvent, stream, channel.finished, 0u);
}

CallKernel prepare_call_kernel(const CallSetup& s, double lower_bound) {
  // lower_bound is checked against the chosen schedule before anything is compiled.
  const Schedule& schedule = *s.route->schedule;
  check_lower_bound(lower_bound, schedule.eligibility.lower_bound.min, schedule.eligibility.lower_bound.max,
                    safe_lower_bound_magnitude(schedule.chunk_size, schedule.exponent_anchor), schedule.name);
  CallKernel k;
  k.kernel = KernelRegistry::instance().prepare(schedule, s.route->target, s.route->shape);
  k.module = &KernelRegistry::instance().module_for(*k.kernel);
  return k;
}

ArgValues shape_values(const KernelPlan& plan, const ProblemShape& p, const PrefillArgs& args) {
  ArgValues values(plan.abi); // set in the ABI's order
  values.set("beta_token_stride", p.beta_token_stride).set("seq_len", p.seq_len).set("total_tokens", p.total_tokens);
  values.set("num_seqs", static_cast<std::int32_t>(p.num_seqs)).set("heads", static_cast<std::int32_t>(p.heads));
  values.set("offsets_i64", static_cast<std::int32_t>(p.offsets_i64 ? 1 : 0));
  values.set("gate_scale", static_cast<float>(args.lower_bound * k_log2e));
  values.set("ready_epoch", std::int32_t{0});
  values.set("chunk_begin", std::int32_t{0}).set("chunk_major", std::int32_t{0});
  values.set("state_slot_stride", p.state_slot_stride);
  values.set("checkpoint_chunks", static_cast<std::int32_t>(p.checkpoint_interval / plan.tiles.chunk_size));
  values.set("prepare_streams", std::int32_t{0});
  return values;
}

CallFields call_fields(const KernelPlan& plan) {
  const ArgAbi& abi = plan.abi;
  CallFields f;
  ArgSlotFinder slot(abi); // asked in the ABI's order (compiler/lower/plan_arg_abi.cpp)
  f.q = slot("q");
  f.k = slot("k");
  f.v = slot("v");
  f.g = slot("g");
  f.beta = slot("beta");
  f.a_log = slot("a_log");
  f.dt_bias = slot("dt_bias");
  f.out = slot("out");
  f.state_in = slot("state_in");
  f.state_out = slot("state_out");
  f.cu_seqlens = slot("cu_seqlens");
  f.chunk_offsets = slot("chunk_offsets");
  f.workspace = slot("workspace");
  f.scale = slot("scale");
  f.ready_flags = slot("ready_flags");
  f.ready_epoch = slot("ready_epoch");
  f.chunk_begin = slot("chunk_begin");
  f.chunk_major = slot("chunk_major");
  f.state_indices = slot("state_indices");
  f.seq_order = slot("seq_order");
  f.checkpoints = slot("checkpoints");
  f.checkpoint_starts = slot("checkpoint_starts");
  f.prepare_streams = slot("prepare_streams");
  if (plan.tile_tensor_maps) {
    for (const std::string& tensor : plan.tile_tensor_maps->tensors) {
      const TensorRef PrefillArgs::*ref = tensor == "q"   ? &PrefillArgs::q
                                          : tensor == "k" ? &PrefillArgs::k
                                          : tensor == "g" ? &PrefillArgs::g
                                          : tensor == "v" ? &PrefillArgs::v
                                                          : nullptr;
      if (ref == nullptr) {
        throw InternalError(fmt::format("plan {} asks for a tensor map of '{}', which no argument is",
                                        plan.schedule_name, tensor));
      }
      const std::string name = "tma_" + tensor;
      f.tensor_maps.push_back({slot(name), ref, name});
    }
  }
  if (plan.checkpoint_tensor_map) {
    f.checkpoint_map = slot("tma_checkpoints");
  }
  if (plan.state_tensor_map) {
    f.state_map = slot("tma_state");
  }
  return f;
}

void set_call_values(ArgValues& values, const CallFields& f, const KernelPlan& plan, const ProblemShape& p,
                     const PrefillArgs& args, const CallBuffers& b) {
  values.set(f.q, args.q.data).set(f.k, args.k.data).set(f.v, args.v.data).set(f.g, args.g.data);
  values.set(f.beta, args.beta.data).set(f.a_log, args.a_log.data).set(f.dt_bias, args.dt_bias.data);
  values.set(f.out, b.out);
  values.set(f.state_in, b.state_in).set(f.state_out, static_cast<const void*>(b.state_out));
  values.set(f.cu_seqlens, args.cu_seqlens.data);
  values.set(f.chunk_offsets, static_cast<const void*>(b.workspace));
  values.set(f.workspace, static_cast<const void*>(b.workspace + sequence_table_bytes(p)));
  values.set(f.scale, static_cast<float>(args.scale));
  values.set(f.ready_flags, static_cast<const void*>(nullptr));
  values.set(f.state_indices, args.ssm_state_indices.data);
  values.set(f.seq_order, args.seq_order.data);
  values.set(f.checkpoints, args.state_checkpoints.data).set(f.checkpoint_starts, args.checkpoint_cu_starts.data);
  if (plan.tile_tensor_maps) {
    set_tile_tensor_maps(*plan.tile_tensor_maps, f.tensor_maps, plan, p, args, values);
  }
  if (plan.checkpoint_tensor_map) {
    set_checkpoint_tensor_map(*plan.checkpoint_tensor_map, f.checkpoint_map, plan, args, values);
  }
  if (plan.state_tensor_map) {
    set_state_tensor_map(*plan.state_tensor_map, f.state_map, plan, p, args, b, values);
  }
}

ArgValues call_values(const KernelPlan& plan, const CallFields& fields, const ProblemShape& p, const PrefillArgs& args,
                      const CallBuffers& b) {
  ArgValues values = shape_values(plan, p, args);
  set_call_values(values, fields, plan, p, args, b);
  return values;
}

std::vector<ResolvedLaunch> sequential_launches(const KernelPlan& plan, const runtime::LoadedModule& module,
                                                const ProblemShape& p, int sm_count) {
  std::vector<ResolvedLaunch> out;
  for (const EntryPlan& e : plan.entries) {
    if (launches(e, p)) {
      // a kernel that starts early never does so as the call's first one (the
      // kernel before it would be the caller's)
      const bool early = e.launch.programmatic && !out.empty();
      out.push_back(resolve_launch(
          module, e, grid_of(e, p, plan, sm_count),
          {early ? runtime::StreamOrder::programmatic : runtime::StreamOrder::serialized, std::nullopt}));
    }
  }
  return out;
}

void launch_sequential(const std::vector<ResolvedLaunch>& launches, const ArgValues& values, CUstream stream) {
  const std::vector<std::uint8_t>& params = values.packed();
  for (const ResolvedLaunch& l : launches) {
    launch_resolved(l, params, stream);
  }
}

} // namespace kda
