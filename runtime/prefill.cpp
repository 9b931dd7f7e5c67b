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
#include "runtime/router.hpp"
#include "runtime/stream_workspace.hpp"
#include "runtime/tuning_table.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

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

struct CallSetup {
  ProblemShape problem;
  RouteDecision route;
  int device = 0;
};

// Per context: the device description (queried once).
DeviceDescription describe_current_device(int& ordinal) {
  static std::mutex mutex;
  static std::map<CUdevice, std::pair<int, DeviceDescription>> known;
  const CUdevice device = runtime::current_device();
  std::lock_guard lock(mutex);
  auto it = known.find(device);
  if (it == known.end()) {
    const runtime::DeviceInfo info = runtime::current_device_info();
    DeviceDescription d;
    d.cc_major = info.cc_major;
    d.cc_minor = info.cc_minor;
    d.sm_count = info.sm_count;
    const runtime::NvrtcVersion nvrtc = runtime::NvrtcCompiler().version();
    d.nvrtc_major = nvrtc.major;
    d.nvrtc_minor = nvrtc.minor;
    it = known.emplace(device, std::make_pair(info.ordinal, d)).first;
  }
  ordinal = it->second.first;
  return it->second.second;
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

// Route decisions are memoised by what decides them.
RouteDecision route_memo(const DeviceDescription& d, const ProblemShape& p, const PrefillOptions& options) {
  static std::mutex mutex;
  static std::map<std::string, RouteDecision> memo;
  const std::string key = fmt::format("{}.{}/{}/{}.{}/{}/{}/{}/{}/{}/{:.17g}", d.cc_major, d.cc_minor, d.sm_count,
                                      d.nvrtc_major, d.nvrtc_minor, to_string(p.layout), to_string(p.state_dtype),
                                      p.state_in || p.state_out, p.heads, options.schedule.value_or(""),
                                      p.lower_bound.value_or(0.0));
  const std::string key_with_class =
      key + "/" + std::string(to_string(shape_class(static_cast<std::int64_t>(p.num_seqs) * p.heads, d.sm_count))) +
      "/" + (options.family ? std::string(to_string(*options.family)) : std::string());
  std::lock_guard lock(mutex);
  auto it = memo.find(key_with_class);
  if (it == memo.end()) {
    it = memo.emplace(key_with_class,
                      route(shipped_schedules(), d, p, RouteRequest{options.schedule, options.family, &tuning_table()}))
             .first;
  }
  return it->second;
}

CallSetup set_up(const PrefillArgs& args, const PrefillOptions& options) {
  runtime::ensure_current_context();
  CallSetup s;
  const DeviceDescription d = describe_current_device(s.device);
  s.problem = check_prefill_args(args, s.device, pointer_device);
  s.route = route_memo(d, s.problem, options);
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

std::int64_t workspace_bytes(const KernelPlan& plan, const ProblemShape& p) {
  const std::int64_t chunk = plan.tiles.chunk_size;
  const std::int64_t chunks = p.layout == LayoutKind::fixed ? p.num_seqs * ((p.seq_len + chunk - 1) / chunk)
                                                            : p.total_tokens / chunk + p.num_seqs;
  const std::int64_t offsets = (static_cast<std::int64_t>(p.num_seqs) + 1) * 4;
  return (offsets + 255) / 256 * 256 + chunks * p.heads * plan.workspace.record_bytes;
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

std::string explain_prefill_route(const PrefillArgs& args, const PrefillOptions& options) {
  return set_up(args, options).route.explanation;
}

PrefillResult recurrent_kda_prefill(const PrefillArgs& args, const PrefillOptions& options) {
  const CallSetup s = set_up(args, options);
  const ProblemShape& p = s.problem;
  // lower_bound is checked against the chosen schedule before anything is compiled.
  const Schedule& schedule = *s.route.schedule;
  check_lower_bound(args.lower_bound, schedule.eligibility.lower_bound.min, schedule.eligibility.lower_bound.max,
                    safe_lower_bound_magnitude(schedule.chunk_size, schedule.exponent_anchor), schedule.name);
  std::shared_ptr<const PreparedKernel> kernel =
      KernelRegistry::instance().prepare(schedule, s.route.target, s.route.shape);
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
  const std::int64_t offsets_bytes = ((static_cast<std::int64_t>(p.num_seqs) + 1) * 4 + 255) / 256 * 256;
  ArgValues values;
  values.set("q", args.q.data).set("k", args.k.data).set("v", args.v.data).set("g", args.g.data);
  values.set("beta", args.beta.data).set("a_log", args.a_log.data).set("dt_bias", args.dt_bias.data);
  values.set("out", static_cast<const void*>(result.out));
  values.set("state_in", state_in).set("state_out", static_cast<const void*>(state_out));
  values.set("cu_seqlens", args.cu_seqlens.data);
  values.set("chunk_offsets", static_cast<const void*>(workspace));
  values.set("workspace", static_cast<const void*>(workspace + offsets_bytes));
  values.set("beta_token_stride", p.beta_token_stride).set("seq_len", p.seq_len).set("total_tokens", p.total_tokens);
  values.set("num_seqs", static_cast<std::int32_t>(p.num_seqs)).set("heads", static_cast<std::int32_t>(p.heads));
  values.set("offsets_i64", static_cast<std::int32_t>(p.offsets_i64 ? 1 : 0));
  values.set("scale", static_cast<float>(args.scale));
  values.set("gate_scale", static_cast<float>(args.lower_bound * k_log2e));
  std::vector<std::uint8_t> params = pack_args(plan.abi, values);
  void* kernel_args[] = {params.data()};
  for (const EntryPlan& e : plan.entries) {
    runtime::launch(module.function(e.entry_name).function, grid_of(e, p, plan),
                    {static_cast<unsigned>(e.launch.threads), 1, 1}, static_cast<unsigned>(e.launch.dynamic_smem),
                    static_cast<CUstream>(args.stream), kernel_args);
  }
  return result;
}

} // namespace kda
