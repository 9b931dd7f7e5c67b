#include "tools/bench_runner.hpp"
#include "tools/args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace kda::tools {

using runtime::driver_api;

DeviceBytes::DeviceBytes(std::size_t n) : bytes(n) {
  KDA_CU(cuMemAlloc, &ptr, std::max<std::size_t>(n, 16));
}

DeviceBytes::~DeviceBytes() {
  driver_api().cuMemFree(ptr);
}

namespace {

std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

} // namespace

RandomPool::RandomPool(std::uint64_t seed, std::size_t elements) : m_normal_bf16(elements * 2), m_elements(elements) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::uint16_t> host(elements);
  for (auto& x : host) {
    x = float_to_bf16_bits(normal(rng));
  }
  KDA_CU(cuMemcpyHtoD, m_normal_bf16.ptr, host.data(), elements * 2);
  m_rng.seed(seed + 1);
}

void RandomPool::fill_normal_bf16(void* dst, std::size_t elements) {
  std::size_t done = 0;
  while (done < elements) {
    const std::size_t offset = m_rng() % (m_elements / 2);
    const std::size_t n = std::min(elements - done, m_elements - offset);
    KDA_CU(cuMemcpyAsync, reinterpret_cast<CUdeviceptr>(dst) + done * 2, m_normal_bf16.ptr + offset * 2, n * 2,
           nullptr);
    done += n;
  }
}

std::int64_t state_slots(const Workload& wl) {
  if (!wl.features.pool) {
    return wl.seqs;
  }
  return wl.features.pool_slots > 0 ? wl.features.pool_slots : 2 * std::int64_t{wl.seqs};
}

namespace {

void make_sets(Workload& wl, RandomPool& pool, int count) {
  const std::size_t elems = static_cast<std::size_t>(wl.tokens) * wl.w->heads * 128;
  const std::size_t slot_elems = static_cast<std::size_t>(wl.w->heads) * 128 * 128;
  const std::size_t state_elems = static_cast<std::size_t>(state_slots(wl)) * slot_elems;
  for (int i = 0; i < count; ++i) {
    CallBuffers b;
    for (auto* t : {&b.q, &b.k, &b.v, &b.g}) {
      *t = std::make_unique<DeviceBytes>(elems * 2);
      pool.fill_normal_bf16((*t)->data(), elems);
    }
    b.beta = std::make_unique<DeviceBytes>(static_cast<std::size_t>(wl.tokens) * wl.w->heads * 2);
    pool.fill_normal_bf16(b.beta->data(), static_cast<std::size_t>(wl.tokens) * wl.w->heads);
    if (!wl.features.no_state) {
      b.state = std::make_unique<DeviceBytes>(state_elems * 2);
      pool.fill_normal_bf16(b.state->data(), state_elems); // N(0,1); scaled below is not needed for timing
    }
    b.out = std::make_unique<DeviceBytes>(elems * 2);
    if (wl.checkpoint_rows > 0) {
      b.checkpoints = std::make_unique<DeviceBytes>(static_cast<std::size_t>(wl.checkpoint_rows) * slot_elems * 2);
    }
    wl.sets.push_back(std::move(b));
  }
}

} // namespace

Workload make_workload(const BenchWorkload& w, RandomPool& pool, int sets, std::mt19937_64& rng,
                       const CallFeatures& features) {
  Workload wl;
  wl.w = &w;
  wl.features = features;
  for (std::int64_t l : w.seqlens) {
    wl.tokens += l;
  }
  wl.seqs = static_cast<int>(w.seqlens.size());
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> a_log(static_cast<std::size_t>(w.heads)), dt_bias(static_cast<std::size_t>(w.heads) * 128);
  for (float& x : a_log) {
    x = uniform(rng);
  }
  for (float& x : dt_bias) {
    x = uniform(rng);
  }
  wl.a_log = std::make_unique<DeviceBytes>(a_log.size() * 4);
  wl.dt_bias = std::make_unique<DeviceBytes>(dt_bias.size() * 4);
  KDA_CU(cuMemcpyHtoD, wl.a_log->ptr, a_log.data(), a_log.size() * 4);
  KDA_CU(cuMemcpyHtoD, wl.dt_bias->ptr, dt_bias.data(), dt_bias.size() * 4);
  std::vector<std::int32_t> cu{0};
  for (std::int64_t l : w.seqlens) {
    cu.push_back(cu.back() + static_cast<std::int32_t>(l));
  }
  wl.cu = std::make_unique<DeviceBytes>(cu.size() * 4);
  KDA_CU(cuMemcpyHtoD, wl.cu->ptr, cu.data(), cu.size() * 4);
  if (features.pool) {
    // sequence i in slot s (N - 1 - i) + s - 1 of the pool, s = slots / N
    // (2 by default): reversed and spread, the slots between untouched
    const std::int64_t slots_total = state_slots(wl);
    if (slots_total < wl.seqs) {
      throw UsageError(fmt::format("--pool-slots {} is fewer than the {} sequences of {}", slots_total, wl.seqs, w.name));
    }
    const std::int64_t spread = slots_total / wl.seqs;
    std::vector<std::int32_t> slots(static_cast<std::size_t>(wl.seqs));
    for (int i = 0; i < wl.seqs; ++i) {
      slots[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(spread * (wl.seqs - 1 - i) + spread - 1);
    }
    wl.slots = std::make_unique<DeviceBytes>(slots.size() * 4);
    KDA_CU(cuMemcpyHtoD, wl.slots->ptr, slots.data(), slots.size() * 4);
  }
  if (features.checkpoint_every > 0) {
    std::vector<std::int64_t> starts{0};
    for (std::int64_t l : w.seqlens) {
      starts.push_back(starts.back() + (l + features.checkpoint_every - 1) / features.checkpoint_every);
    }
    wl.checkpoint_rows = starts.back();
    wl.checkpoint_starts = std::make_unique<DeviceBytes>(starts.size() * 8);
    KDA_CU(cuMemcpyHtoD, wl.checkpoint_starts->ptr, starts.data(), starts.size() * 8);
  }
  make_sets(wl, pool, sets);
  return wl;
}

PrefillArgs args_for(const Workload& wl, const CallBuffers& b) {
  PrefillArgs a;
  const bool packed = wl.seqs > 1;
  const std::int64_t batch = 1;
  const std::vector<std::int64_t> shape{batch, wl.tokens, wl.w->heads, 128};
  a.q = TensorRef::contiguous(b.q->data(), ElementType::bf16, shape);
  a.k = TensorRef::contiguous(b.k->data(), ElementType::bf16, shape);
  a.v = TensorRef::contiguous(b.v->data(), ElementType::bf16, shape);
  a.g = TensorRef::contiguous(b.g->data(), ElementType::bf16, shape);
  a.beta = TensorRef::contiguous(b.beta->data(), ElementType::bf16, {batch, wl.tokens, wl.w->heads});
  a.a_log = TensorRef::contiguous(wl.a_log->data(), ElementType::fp32, {wl.w->heads});
  a.dt_bias = TensorRef::contiguous(wl.dt_bias->data(), ElementType::fp32, {wl.w->heads, 128});
  a.lower_bound = -5.0;
  if (!wl.features.no_state) {
    a.initial_state = TensorRef::contiguous(b.state->data(), ElementType::bf16,
                                            {state_slots(wl), wl.w->heads, 128, 128});
  }
  if (wl.features.pool) {
    a.ssm_state_indices = TensorRef::contiguous(wl.slots->data(), ElementType::i32, {wl.seqs});
  }
  if (wl.features.checkpoint_every > 0) {
    a.checkpoint_every_n_tokens = wl.features.checkpoint_every;
    a.state_checkpoints =
        TensorRef::contiguous(b.checkpoints->data(), ElementType::bf16, {wl.checkpoint_rows, wl.w->heads, 128, 128});
    a.checkpoint_cu_starts = TensorRef::contiguous(wl.checkpoint_starts->data(), ElementType::i64, {wl.seqs + 1});
  }
  a.out = TensorRef::contiguous(b.out->data(), ElementType::bf16, shape);
  if (packed) {
    a.cu_seqlens = TensorRef::contiguous(wl.cu->data(), ElementType::i32, {wl.seqs + 1});
  }
  return a;
}

namespace {

// The calls of one CallPath over a workload's buffer sets: eager calls, runs
// of one plan (a workspace per set), or graphs of one run per set.
class Caller {
public:
  Caller(const Workload& wl, const PrefillOptions& options, CallPath path) : m_wl(wl), m_options(options), m_path(path) {
    // the arguments are built once per buffer set, as an engine keeps its
    // own: the host time per call is kdajit's
    for (const CallBuffers& set : wl.sets) {
      m_args.push_back(args_for(wl, set));
    }
    if (path == CallPath::eager) {
      return;
    }
    m_plan = std::make_unique<PrefillPlan>(args_for(wl, wl.sets[0]), options);
    for (std::size_t i = 0; i < wl.sets.size(); ++i) {
      m_workspaces.push_back(std::make_unique<DeviceBytes>(static_cast<std::size_t>(m_plan->workspace_bytes())));
    }
    if (path != CallPath::graph) {
      return;
    }
    KDA_CU(cuStreamCreate, &m_stream, CU_STREAM_NON_BLOCKING);
    for (std::size_t i = 0; i < wl.sets.size(); ++i) {
      PrefillArgs a = args_for(wl, wl.sets[i]);
      a.stream = m_stream;
      m_plan->run(a, m_workspaces[i]->data(), m_plan->workspace_bytes()); // warm
      KDA_CU(cuStreamSynchronize, m_stream);
      CUgraph graph = nullptr;
      CUgraphExec exec = nullptr;
      KDA_CU(cuStreamBeginCapture, m_stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
      m_plan->run(a, m_workspaces[i]->data(), m_plan->workspace_bytes());
      KDA_CU(cuStreamEndCapture, m_stream, &graph);
      // node priorities kept (docs/runtime.md, graph rules): the overlapped
      // recurrence runs ahead of the prepare kernel beside it
      KDA_CU(cuGraphInstantiateWithFlags, &exec, graph,
             static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY));
      driver_api().cuGraphDestroy(graph);
      m_graphs.push_back(exec);
    }
  }
  ~Caller() {
    for (CUgraphExec g : m_graphs) {
      driver_api().cuGraphExecDestroy(g);
    }
    if (m_stream != nullptr) {
      driver_api().cuStreamDestroy(m_stream);
    }
  }
  Caller(const Caller&) = delete;
  Caller& operator=(const Caller&) = delete;

  /// The stream the calls run on.
  CUstream stream() const { return m_stream; }
  /// Call i (buffer set i mod sets).
  void call(int i) {
    const std::size_t set = static_cast<std::size_t>(i) % m_wl.sets.size();
    if (m_path == CallPath::graph) {
      KDA_CU(cuGraphLaunch, m_graphs[set], m_stream);
      return;
    }
    const PrefillArgs& a = m_args[set];
    if (m_path == CallPath::planned) {
      m_plan->run(a, m_workspaces[set]->data(), m_plan->workspace_bytes());
      return;
    }
    const PrefillResult r = recurrent_kda_prefill(a, m_options);
    if (m_description.empty()) {
      m_description = r.schedule + " on " + r.target + (r.prepare_overlapped ? " (overlapped)" : "");
      m_overlap = r.prepare_overlapped ? r.prepare_overlap_reason : "";
    }
  }
  /// "<schedule> on <target>" and how, after the first call.
  /// The prepare overlap's decision when the calls took it, after the first call.
  std::string prepare_overlap() const {
    if (m_path == CallPath::eager) {
      return m_overlap;
    }
    return m_plan->prepare_overlapped() ? m_plan->prepare_overlap_reason() : "";
  }
  std::string description() const {
    if (m_path == CallPath::eager) {
      return m_description;
    }
    const char* how = m_path == CallPath::graph ? "graph" : "planned";
    return fmt::format("{} on {} ({}{})", m_plan->schedule(), m_plan->target(), how,
                       m_plan->prepare_overlapped() ? ", overlapped" : "");
  }

private:
  const Workload& m_wl;
  PrefillOptions m_options;
  CallPath m_path;
  std::vector<PrefillArgs> m_args;
  std::unique_ptr<PrefillPlan> m_plan;
  std::vector<std::unique_ptr<DeviceBytes>> m_workspaces;
  std::vector<CUgraphExec> m_graphs;
  CUstream m_stream = nullptr;
  std::string m_description;
  std::string m_overlap;
};

} // namespace

Timing time_calls(const Workload& wl, int warmup, int iters, const PrefillOptions& options, CallPath path,
                  bool profile_range) {
  Caller caller(wl, options, path);
  CUevent start = nullptr;
  CUevent stop = nullptr;
  KDA_CU(cuEventCreate, &start, 0);
  KDA_CU(cuEventCreate, &stop, 0);
  Timing t;
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    if (profile_range && i == warmup) {
      KDA_CU(cuProfilerStart);
    }
    KDA_CU(cuEventRecord, start, caller.stream());
    caller.call(i);
    KDA_CU(cuEventRecord, stop, caller.stream());
    KDA_CU(cuEventSynchronize, stop);
    float elapsed = 0.0f;
    KDA_CU(cuEventElapsedTime, &elapsed, start, stop);
    if (i >= warmup) {
      ms.push_back(elapsed);
    }
  }
  if (profile_range) {
    KDA_CU(cuProfilerStop);
  }
  t.schedule = caller.description();
  t.prepare_overlap = caller.prepare_overlap();
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  driver_api().cuEventDestroy(start);
  driver_api().cuEventDestroy(stop);
  return t;
}

HostTime host_time_per_call(const Workload& wl, int calls, const PrefillOptions& options, CallPath path) {
  Caller caller(wl, options, path);
  caller.call(0);
  KDA_CU(cuCtxSynchronize);
  // Unmetered first, so that the figure is not the meter's; then metered, for
  // the driver's share (read before the closing synchronisation).
  runtime::DriverCallTally calls_made;
  auto loop = [&] {
    const runtime::DriverCallTally before = runtime::driver_call_tally();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      runtime::mark_driver_call_start();
      caller.call(0);
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const runtime::DriverCallTally after = runtime::driver_call_tally();
    calls_made = {after.calls - before.calls, after.nanoseconds - before.nanoseconds,
                  after.until_first_enqueue_nanoseconds - before.until_first_enqueue_nanoseconds,
                  after.marks_reached - before.marks_reached};
    KDA_CU(cuCtxSynchronize);
    return us / calls;
  };
  // The least of five loops of each kind: other work on the host only adds.
  constexpr int k_loops = 5;
  HostTime t;
  t.us = loop();
  for (int i = 1; i < k_loops; ++i) {
    t.us = std::min(t.us, loop());
  }
  runtime::set_driver_metering(true);
  double metered_us = loop();
  runtime::DriverCallTally least = calls_made;
  for (int i = 1; i < k_loops; ++i) {
    const double us = loop();
    if (us < metered_us) {
      metered_us = us;
      least = calls_made;
    }
  }
  calls_made = least;
  runtime::set_driver_metering(false);
  t.driver_calls = static_cast<double>(calls_made.calls) / calls;
  t.until_first_enqueue_us = calls_made.marks_reached == 0
                                 ? 0.0
                                 : static_cast<double>(calls_made.until_first_enqueue_nanoseconds) * 1e-3 /
                                       static_cast<double>(calls_made.marks_reached);
  // A metered call reads the clock twice: about one read falls inside the
  // interval it measures, the other outside; that one is the meter's.
  constexpr int k_reads = 100'000;
  const auto r0 = std::chrono::steady_clock::now();
  std::int64_t odd = 0; // kept, so that the reads are made
  for (int i = 0; i < k_reads; ++i) {
    odd += std::chrono::steady_clock::now().time_since_epoch().count() & 1;
  }
  asm volatile("" : : "r"(odd));
  const double read_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - r0).count() / k_reads;
  t.outside_driver_us = metered_us - static_cast<double>(calls_made.nanoseconds) * 1e-3 / calls - t.driver_calls * read_us;
  return t;
}

double time_back_to_back(const Workload& wl, int warmup, int calls, const PrefillOptions& options) {
  for (int i = 0; i < warmup; ++i) {
    recurrent_kda_prefill(args_for(wl, wl.sets[static_cast<std::size_t>(i) % wl.sets.size()]), options);
  }
  CUevent start = nullptr;
  CUevent stop = nullptr;
  KDA_CU(cuEventCreate, &start, 0);
  KDA_CU(cuEventCreate, &stop, 0);
  KDA_CU(cuCtxSynchronize);
  KDA_CU(cuEventRecord, start, nullptr);
  for (int i = 0; i < calls; ++i) {
    recurrent_kda_prefill(args_for(wl, wl.sets[static_cast<std::size_t>(i) % wl.sets.size()]), options);
  }
  KDA_CU(cuEventRecord, stop, nullptr);
  KDA_CU(cuEventSynchronize, stop);
  float elapsed = 0.0f;
  KDA_CU(cuEventElapsedTime, &elapsed, start, stop);
  driver_api().cuEventDestroy(start);
  driver_api().cuEventDestroy(stop);
  return static_cast<double>(elapsed) / calls;
}

} // namespace kda::tools
