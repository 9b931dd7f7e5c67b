#include "runtime/kda.hpp"

#include "compiler/exponent_range.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/arg_pack.hpp"
#include "runtime/check_args.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/overlap_streams.hpp"
#include "runtime/prepare_overlap.hpp"
#include "runtime/router.hpp"
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

std::optional<int> pointer_device(const void* p) {
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

struct KnownDevice {
  runtime::DeviceInfo info;
  DeviceDescription description;
};

struct CallSetup {
  ProblemShape problem;
  const RouteDecision* route = nullptr; ///< memoised (route_memo): never copied per call
  const KnownDevice* device = nullptr;
};

// Per device: what the router and the launcher need (queried once).
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

// Route decisions are memoised by what decides them (a tuple, not a
// formatted string: this runs on every call's dispatch path).
using RouteMemoKey = std::tuple<int, int, int, int, int, int, int, bool, std::int64_t, std::string, double,
                                std::string, int, int>;

const RouteDecision& route_memo(const DeviceDescription& d, const ProblemShape& p, const PrefillOptions& options) {
  static std::mutex mutex;
  static std::map<RouteMemoKey, RouteDecision> memo;
  const ShapeClass shape = shape_class(static_cast<std::int64_t>(p.num_seqs) * p.heads, d.sm_count);
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
                   options.family ? static_cast<int>(*options.family) : -1};
  std::lock_guard lock(mutex);
  auto it = memo.find(key);
  if (it == memo.end()) {
    it = memo.emplace(std::move(key),
                      route(shipped_schedules(), d, p,
                            RouteRequest{options.schedule, options.family, &tuning_table(), options.target}))
             .first;
  }
  return it->second;
}

CallSetup set_up(const PrefillArgs& args, const PrefillOptions& options) {
  runtime::ensure_current_context();
  CallSetup s;
  s.device = &describe_current_device();
  s.problem = check_prefill_args(args, s.device->info.ordinal, pointer_device);
  s.route = &route_memo(s.device->description, s.problem, options);
  return s;
}

runtime::Dim3 grid_of(const EntryPlan& e, const ProblemShape& p, const KernelPlan& plan) {
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
  }
  return {1, 1, 1};
}

// Records of the workspace: an upper bound of the chunks of all sequences x heads.
std::int64_t workspace_records(const KernelPlan& plan, const ProblemShape& p) {
  const std::int64_t chunk = plan.tiles.chunk_size;
  const std::int64_t chunks = p.layout == LayoutKind::fixed ? p.num_seqs * ((p.seq_len + chunk - 1) / chunk)
                                                            : p.total_tokens / chunk + p.num_seqs;
  return chunks * p.heads;
}

// The sequence table at the workspace's start: chunk offsets (N + 1 int32)
// and the packed layout's sequence order (N int32, common/sequences),
// rounded up to 256 bytes.
std::int64_t sequence_table_bytes(const ProblemShape& p) {
  const std::int64_t bytes = (2 * static_cast<std::int64_t>(p.num_seqs) + 1) * 4;
  return (bytes + 255) / 256 * 256;
}

// The sequence table, the records, then per-CTA scratch of the recurrent grid
// (sequences x heads x row blocks: the tcgen05 proxy's TMEM images).
std::int64_t workspace_bytes(const KernelPlan& plan, const ProblemShape& p) {
  const std::int64_t ctas = static_cast<std::int64_t>(p.num_seqs) * p.heads * (128 / plan.tiles.m_tile);
  return sequence_table_bytes(p) + workspace_records(plan, p) * plan.workspace.record_bytes +
         ctas * plan.workspace.cta_scratch_bytes;
}

// The TMA tensor maps of a plan that loads whole chunks with TMA: q, k, g, v
// as [tokens][heads][128] bf16 rows, boxes of 64 columns x C rows with the
// 128-byte swizzle (compiler/encodings/tensor_map.hpp), encoded by the driver
// per call (the addresses change). No tokens: zero maps, never read.
void set_tile_tensor_maps(const KernelPlan& plan, const ProblemShape& p, const PrefillArgs& args, ArgValues& values) {
  const std::pair<const char*, const TensorRef*> tensors[] = {
      {"tma_q", &args.q}, {"tma_k", &args.k}, {"tma_g", &args.g}, {"tma_v", &args.v}};
  for (const auto& [name, tensor] : tensors) {
    if (p.total_tokens == 0) {
      values.set(name, TensorMapValue{});
      continue;
    }
    const TensorMapRequest r = swizzled_rows_tensor_map(
        reinterpret_cast<std::uint64_t>(tensor->data), TmaDataType::bf16, static_cast<std::uint64_t>(p.total_tokens),
        static_cast<std::uint64_t>(p.heads), static_cast<std::uint32_t>(plan.tiles.head_dim),
        static_cast<std::uint32_t>(plan.umma->tma_box_cols), static_cast<std::uint32_t>(plan.tiles.chunk_size));
    values.set(name, runtime::encode_tensor_map(r, name));
  }
}

const EntryPlan* entry_with_role(const KernelPlan& plan, KernelRole role) {
  for (const EntryPlan& e : plan.entries) {
    if (e.role == role && e.kernel != "chunk_offsets") {
      return &e;
    }
  }
  return nullptr;
}

KernelFootprint footprint_of(const EntryPlan& e, const runtime::LoadedModule& module) {
  const runtime::FunctionAttributes& a = module.function(e.entry_name).attributes;
  return {e.launch.threads, a.num_regs, a.shared_size_bytes + e.launch.dynamic_smem};
}

OverlapDecision decide_overlap(const KernelPlan& plan, const runtime::LoadedModule& module, const CallSetup& s,
                               const PrefillArgs& args, const PrefillOptions& options) {
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
  r.capturing = r.allowed && stream_is_capturing(args.stream);
  if (r.pairs == 0 || r.chunk_grid_extent == 0) {
    OverlapDecision none;
    none.reason = "off: no chunks";
    return none;
  }
  OverlapDecision decision = decide_prepare_overlap(*plan.prepare_overlap, r);
  // Measurement aid (docs/runtime.md): KDAJIT_PREPARE_LEAD=F replaces the
  // model's lead by F x the chunks per sequence (timing only, same results);
  // read once per process, not on every call's dispatch path.
  static const std::optional<double> k_lead_fraction = []() -> std::optional<double> {
    const char* lead = std::getenv("KDAJIT_PREPARE_LEAD");
    return lead != nullptr ? std::optional<double>(std::clamp(std::atof(lead), 0.0, 1.0)) : std::nullopt;
  }();
  if (decision.overlap && k_lead_fraction) {
    const double fraction = *k_lead_fraction;
    decision.lead_chunks = std::clamp<std::int64_t>(static_cast<std::int64_t>(fraction * r.chunk_grid_extent), 1,
                                             r.chunk_grid_extent - 1);
    decision.reason += fmt::format(" (lead {} from KDAJIT_PREPARE_LEAD)", decision.lead_chunks);
  }
  return decision;
}

// A packed call's chunk_offsets kernel writes the sequence table; with at most
// k_warp_table_max_sequences sequences the kernels derive it in a warp
// (common/sequences) and the launch is skipped.
bool launches(const EntryPlan& e, const ProblemShape& p) {
  return e.kernel != "chunk_offsets" || p.num_seqs > k_warp_table_max_sequences;
}

// Every entry of a plan takes the same parameter struct (the plan's ABI), so
// a call packs it once per set of values and launches each entry with it.
// `order`: programmatic only where the kernel before it on `stream` is this
// call's (the sequential path) and the plan asks for it.
void launch_entry(const runtime::LoadedModule& module, const EntryPlan& e, runtime::Dim3 grid,
                  std::vector<std::uint8_t>& params, CUstream stream,
                  runtime::StreamOrder order = runtime::StreamOrder::serialized) {
  void* kernel_args[] = {params.data()};
  runtime::launch(module.function(e.entry_name).function, grid, {static_cast<unsigned>(e.launch.threads), 1, 1},
                  static_cast<unsigned>(e.launch.dynamic_smem), stream, kernel_args, order);
}

// The overlapped launch (runtime/prepare_overlap.hpp): chunk offsets and the
// leading prepare kernel on the caller's stream; the recurrence on the
// context's high-priority lane, forked after the leading prepare; the rest of
// the chunks prepared beside it; the caller's stream joined to the lane.
void launch_overlapped(const KernelPlan& plan, const runtime::LoadedModule& module, const ProblemShape& p,
                       const OverlapDecision& decision, ArgValues values, CUstream stream) {
  const EntryPlan* prepare = entry_with_role(plan, KernelRole::prepare);
  const EntryPlan* recurrence = entry_with_role(plan, KernelRole::recurrence);
  const ReadyFlags flags = stream_ready_flags(stream, workspace_records(plan, p));
  values.set("ready_flags", static_cast<const void*>(flags.flags));
  values.set("ready_epoch", static_cast<std::int32_t>(flags.epoch));
  values.set("chunk_major", std::int32_t{1});
  values.set("chunk_begin", std::int32_t{0});
  std::vector<std::uint8_t> params = pack_args(plan.abi, values);
  for (const EntryPlan& e : plan.entries) {
    if (e.kernel == "chunk_offsets" && launches(e, p)) {
      launch_entry(module, e, grid_of(e, p, plan), params, stream);
    }
  }
  auto prepare_grid = [&](std::int64_t count) {
    return runtime::Dim3{static_cast<unsigned>(p.heads), static_cast<unsigned>(p.num_seqs),
                         static_cast<unsigned>(count)};
  };
  launch_entry(module, *prepare, prepare_grid(decision.lead_chunks), params, stream);
  OverlapLane lane = acquire_overlap_lane();
  KDA_CU(cuEventRecord, lane.prepared, stream);
  // The rest of the chunks are enqueued before the recurrence that waits for
  // them, and nothing orders them after it: where kernels run one at a time
  // (CUDA_LAUNCH_BLOCKING, a sanitizer) every flag is set before the
  // recurrence starts; otherwise both start when the leading prepare ends.
  values.set("chunk_begin", static_cast<std::int32_t>(decision.lead_chunks));
  params = pack_args(plan.abi, values);
  launch_entry(module, *prepare, prepare_grid(decision.chunk_extent - decision.lead_chunks), params, stream);
  KDA_CU(cuStreamWaitEvent, lane.side, lane.prepared, 0u);
  launch_entry(module, *recurrence, grid_of(*recurrence, p, plan), params, lane.side);
  KDA_CU(cuEventRecord, lane.finished, lane.side);
  KDA_CU(cuStreamWaitEvent, stream, lane.finished, 0u);
}

DeviceBuffer allocate(std::int64_t bytes, void* stream) {
  CUdeviceptr ptr = 0;
  KDA_CU(cuMemAllocAsync, &ptr, static_cast<std::size_t>(bytes), static_cast<CUstream>(stream));
  return DeviceBuffer(reinterpret_cast<void*>(ptr), bytes, stream);
}

} // namespace

DeviceBuffer::DeviceBuffer(void* data, std::int64_t bytes, void* stream) : m_data(data), m_bytes(bytes), m_stream(stream) {}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : m_data(other.m_data), m_bytes(other.m_bytes), m_stream(other.m_stream) {
  other.m_data = nullptr;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    m_data = other.m_data;
    m_bytes = other.m_bytes;
    m_stream = other.m_stream;
    other.m_data = nullptr;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

void DeviceBuffer::release() {
  if (m_data != nullptr && runtime::driver_status().available) {
    runtime::driver_api().cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(m_data), static_cast<CUstream>(m_stream));
  }
  m_data = nullptr;
}

void* DeviceBuffer::detach() {
  void* d = m_data;
  m_data = nullptr;
  return d;
}

std::size_t register_kernel_bundle(const std::string& path) {
  return KernelRegistry::instance().register_bundle(path, &std::cerr);
}

std::string explain_prefill_route(const PrefillArgs& args, const PrefillOptions& options) {
  return set_up(args, options).route->explanation;
}

PrefillResult recurrent_kda_prefill(const PrefillArgs& args, const PrefillOptions& options) {
  const CallSetup s = set_up(args, options);
  const ProblemShape& p = s.problem;
  // lower_bound is checked against the chosen schedule before anything is compiled.
  const Schedule& schedule = *s.route->schedule;
  check_lower_bound(args.lower_bound, schedule.eligibility.lower_bound.min, schedule.eligibility.lower_bound.max,
                    safe_lower_bound_magnitude(schedule.chunk_size, schedule.exponent_anchor), schedule.name);
  std::shared_ptr<const PreparedKernel> kernel =
      KernelRegistry::instance().prepare(schedule, s.route->target, s.route->shape);
  const KernelPlan& plan = kernel->plan;
  const runtime::LoadedModule& module = KernelRegistry::instance().module_for(*kernel);

  PrefillResult result;
  result.schedule = plan.schedule_name;
  result.target = plan.target.name;
  result.out = const_cast<void*>(args.out.data);
  if (!args.out.defined()) {
    result.owned_out = allocate(args.v.numel() * 2, args.stream);
    result.out = result.owned_out.data();
  }
  const void* state_in = nullptr;
  void* state_out = nullptr;
  if (p.state_in) {
    state_in = args.initial_state.data;
    state_out = const_cast<void*>(args.initial_state.data);
  } else if (p.state_out) {
    if (args.final_state.defined()) {
      state_out = const_cast<void*>(args.final_state.data);
    } else {
      result.owned_final_state =
          allocate(static_cast<std::int64_t>(p.num_seqs) * p.heads * 128 * 128 * 2, args.stream);
      state_out = result.owned_final_state.data();
    }
  }
  result.final_state = state_out;

  std::uint8_t* workspace = static_cast<std::uint8_t*>(stream_workspace(args.stream, workspace_bytes(plan, p)));
  ArgValues values;
  values.set("q", args.q.data).set("k", args.k.data).set("v", args.v.data).set("g", args.g.data);
  values.set("beta", args.beta.data).set("a_log", args.a_log.data).set("dt_bias", args.dt_bias.data);
  values.set("out", static_cast<const void*>(result.out));
  values.set("state_in", state_in).set("state_out", static_cast<const void*>(state_out));
  values.set("cu_seqlens", args.cu_seqlens.data);
  values.set("chunk_offsets", static_cast<const void*>(workspace));
  values.set("workspace", static_cast<const void*>(workspace + sequence_table_bytes(p)));
  values.set("beta_token_stride", p.beta_token_stride).set("seq_len", p.seq_len).set("total_tokens", p.total_tokens);
  values.set("num_seqs", static_cast<std::int32_t>(p.num_seqs)).set("heads", static_cast<std::int32_t>(p.heads));
  values.set("offsets_i64", static_cast<std::int32_t>(p.offsets_i64 ? 1 : 0));
  values.set("scale", static_cast<float>(args.scale));
  values.set("gate_scale", static_cast<float>(args.lower_bound * k_log2e));
  values.set("ready_flags", static_cast<const void*>(nullptr)).set("ready_epoch", std::int32_t{0});
  values.set("chunk_begin", std::int32_t{0}).set("chunk_major", std::int32_t{0});
  if (plan.umma && plan.umma->tma_box_cols > 0) {
    set_tile_tensor_maps(plan, p, args, values);
  }
  const OverlapDecision overlap = decide_overlap(plan, module, s, args, options);
  result.prepare_overlapped = overlap.overlap;
  result.prepare_overlap_reason = overlap.reason;
  const CUstream stream = static_cast<CUstream>(args.stream);
  if (overlap.overlap) {
    launch_overlapped(plan, module, p, overlap, values, stream);
    return result;
  }
  std::vector<std::uint8_t> params = pack_args(plan.abi, values);
  bool first = true;
  for (const EntryPlan& e : plan.entries) {
    if (launches(e, p)) {
      // a kernel that starts early never does so as the call's first one (the
      // kernel before it would be the caller's)
      const bool early = e.launch.programmatic && !first;
      launch_entry(module, e, grid_of(e, p, plan), params, stream,
                   early ? runtime::StreamOrder::programmatic : runtime::StreamOrder::serialized);
      first = false;
    }
  }
  return result;
}

} // namespace kda
