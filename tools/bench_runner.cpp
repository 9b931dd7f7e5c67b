#include "tools/bench_runner.hpp"

#include <algorithm>
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

namespace {

void make_sets(Workload& wl, RandomPool& pool, int count) {
  const std::size_t elems = static_cast<std::size_t>(wl.tokens) * wl.w->heads * 128;
  const std::size_t state_elems = static_cast<std::size_t>(wl.seqs) * wl.w->heads * 128 * 128;
  for (int i = 0; i < count; ++i) {
    CallBuffers b;
    for (auto* t : {&b.q, &b.k, &b.v, &b.g}) {
      *t = std::make_unique<DeviceBytes>(elems * 2);
      pool.fill_normal_bf16((*t)->data(), elems);
    }
    b.beta = std::make_unique<DeviceBytes>(static_cast<std::size_t>(wl.tokens) * wl.w->heads * 2);
    pool.fill_normal_bf16(b.beta->data(), static_cast<std::size_t>(wl.tokens) * wl.w->heads);
    b.state = std::make_unique<DeviceBytes>(state_elems * 2);
    pool.fill_normal_bf16(b.state->data(), state_elems); // N(0,1); scaled below is not needed for timing
    b.out = std::make_unique<DeviceBytes>(elems * 2);
    wl.sets.push_back(std::move(b));
  }
}

} // namespace

Workload make_workload(const BenchWorkload& w, RandomPool& pool, int sets, std::mt19937_64& rng) {
  Workload wl;
  wl.w = &w;
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
  a.initial_state = TensorRef::contiguous(b.state->data(), ElementType::bf16, {wl.seqs, wl.w->heads, 128, 128});
  a.out = TensorRef::contiguous(b.out->data(), ElementType::bf16, shape);
  if (packed) {
    a.cu_seqlens = TensorRef::contiguous(wl.cu->data(), ElementType::i32, {wl.seqs + 1});
  }
  return a;
}

Timing time_calls(const Workload& wl, int warmup, int iters, const PrefillOptions& options) {
  CUevent start = nullptr;
  CUevent stop = nullptr;
  KDA_CU(cuEventCreate, &start, 0);
  KDA_CU(cuEventCreate, &stop, 0);
  Timing t;
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    const CallBuffers& b = wl.sets[static_cast<std::size_t>(i) % wl.sets.size()];
    const PrefillArgs args = args_for(wl, b);
    KDA_CU(cuEventRecord, start, nullptr);
    const PrefillResult r = recurrent_kda_prefill(args, options);
    KDA_CU(cuEventRecord, stop, nullptr);
    KDA_CU(cuEventSynchronize, stop);
    float elapsed = 0.0f;
    KDA_CU(cuEventElapsedTime, &elapsed, start, stop);
    if (i >= warmup) {
      ms.push_back(elapsed);
    }
    t.schedule = r.schedule + " on " + r.target + (r.prepare_overlapped ? " (overlapped)" : "");
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  driver_api().cuEventDestroy(start);
  driver_api().cuEventDestroy(stop);
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
