#include "kdajit/kda.hpp"

#include "compiler/errors.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/nvrtc_library.hpp"
#include "runtime/overlap_streams.hpp"
#include "runtime/environment.hpp"
#include "runtime/prefill_call.hpp"
#include "runtime/stream_workspace.hpp"

#include <fmt/format.h>

#include <iostream>

namespace kda {
namespace {

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

std::string kernel_cache_directory() {
  return KernelRegistry::instance().disk_cache().config().root.value_or(std::string());
}

bool add_nvrtc_library_candidate(const std::string& path) {
  return runtime::add_nvrtc_library_candidate(path);
}

std::string toolchain_summary() {
  std::string out = runtime::driver_status().to_string();
  try {
    const runtime::NvrtcLibrary& nvrtc = runtime::NvrtcLibrary::get();
    out += fmt::format("; NVRTC {}.{} ({})", nvrtc.version().major, nvrtc.version().minor, nvrtc.path());
  } catch (const std::exception& e) {
    out += fmt::format("; no NVRTC: {}", e.what());
  }
  return out;
}

std::string explain_prefill_route(const PrefillArgs& args, const PrefillOptions& options) {
  return set_up_call(args, options).route->explanation;
}

PrefillResult recurrent_kda_prefill(const PrefillArgs& args, const PrefillOptions& options) {
  const CallSetup s = set_up_call(args, options);
  const ProblemShape& p = s.problem;
  if (stream_is_capturing(args.stream)) {
    throw TensorError("stream", "is being captured into a CUDA graph: recurrent_kda_prefill is eager (it may allocate "
                                "and shares a per-stream workspace); capture kda::PrefillPlan::run with a "
                                "caller-owned workspace instead");
  }
  const bool tiered = options.tiered.value_or(runtime::tiered_by_environment());
  const CallKernel k = tiered ? prepare_tiered_call_kernel(s, args.lower_bound, options)
                              : prepare_call_kernel(s, args.lower_bound);
  const KernelPlan& plan = k.plan();

  PrefillResult result;
  result.tier = k.tier;
  result.schedule = plan.schedule_name;
  result.target = plan.target.name;
  result.out = const_cast<void*>(args.out.data);
  if (!args.out.defined()) {
    result.owned_out = allocate(args.v.numel() * 2, args.stream);
    result.out = result.owned_out.data();
  }
  CallBuffers buffers;
  buffers.out = result.out;
  if (p.state_in) {
    buffers.state_in = args.initial_state.data;
    buffers.state_out = const_cast<void*>(args.initial_state.data);
  } else if (p.state_out) {
    if (args.final_state.defined()) {
      buffers.state_out = const_cast<void*>(args.final_state.data);
    } else {
      result.owned_final_state =
          allocate(static_cast<std::int64_t>(p.num_seqs) * p.heads * 128 * 128 * 2, args.stream);
      buffers.state_out = result.owned_final_state.data();
    }
  }
  result.final_state = buffers.state_out;

  // held until the last launch is enqueued (runtime/stream_workspace.hpp)
  StreamLease scratch = lease_stream_scratch(args.stream);
  buffers.workspace = static_cast<std::uint8_t*>(scratch.workspace(call_workspace_bytes(plan, p)));
  const CallFields fields = call_fields(plan);
  ArgValues values = call_values(plan, fields, p, args, buffers);
  const OverlapDecision overlap = decide_overlap(plan, *k.module, s, options);
  result.prepare_overlapped = overlap.overlap;
  result.prepare_overlap_reason = overlap.reason;
  const CUstream stream = static_cast<CUstream>(args.stream);
  if (overlap.overlap) {
    const ReadyFlags flags = scratch.ready_flags(workspace_records(plan, p));
    const OverlapLane lane = acquire_overlap_lane(runtime::ensure_current_context());
    launch_overlapped(overlapped_launches(plan, *k.module, p, overlap, s.device->info.sm_count), fields, values, stream,
                      OverlapChannel{lane.side, lane.prepared, lane.finished, flags, lane.priority});
  } else {
    launch_sequential(sequential_launches(plan, *k.module, p, s.device->info.sm_count), values, stream);
  }
  return result;
}

} // namespace kda
