// Calls whose prepare kernel runs beside the recurrence (schedule
// prepare_overlap, runtime/prepare_overlap.hpp) issued from two streams at
// once, and beside a long call that does not overlap: every call finishes (no
// recurrence waits on a prepare kernel that cannot get an SM) and gives the
// same bits as the same call run alone with the kernels one after the other.
#include "compiler/bf16.hpp"
#include "device_array.hpp"
#include "reference/reference_problem.hpp"
#include "runtime/kda.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <random>

using namespace kda;
using namespace kda::test;
using kda::reference::testing::ProblemSpec;
using kda::reference::testing::RandomProblem;

namespace {

// One problem's device buffers (fixed layout, bf16 state updated in place).
struct DeviceProblem {
  DeviceProblem(std::int64_t batch, std::int64_t tokens, std::int64_t heads, std::uint64_t seed)
      : spec{batch, tokens, heads, {}, reference::testing::GateDistribution::standard, 0}, problem(spec, seed),
        q(DeviceArray::from(problem.q)), k(DeviceArray::from(problem.k)), v(DeviceArray::from(problem.v)),
        g(DeviceArray::from(problem.g)), beta(DeviceArray::from(problem.beta)),
        a_log(DeviceArray::from(problem.a_log)), dt_bias(DeviceArray::from(problem.dt_bias)),
        state(static_cast<std::size_t>(batch * heads * 128 * 128 * 2)),
        out(static_cast<std::size_t>(batch * tokens * heads * 128 * 2)) {
    std::mt19937_64 rng(seed + 1);
    std::normal_distribution<float> normal(0.0f, 0.25f);
    initial_state.resize(state.bytes() / 2);
    for (std::uint16_t& x : initial_state) {
      x = float_to_bf16(normal(rng)).bits;
    }
  }

  // Poisoned output, fresh initial state.
  void reset() {
    out.poison();
    state.upload(initial_state.data(), state.bytes());
  }

  PrefillArgs args(CUstream stream) const {
    PrefillArgs a;
    const std::vector<std::int64_t> shape{spec.batch, spec.tokens, spec.heads, 128};
    a.q = TensorRef::contiguous(q.data(), ElementType::bf16, shape);
    a.k = TensorRef::contiguous(k.data(), ElementType::bf16, shape);
    a.v = TensorRef::contiguous(v.data(), ElementType::bf16, shape);
    a.g = TensorRef::contiguous(g.data(), ElementType::bf16, shape);
    a.beta = TensorRef::contiguous(beta.data(), ElementType::bf16, {spec.batch, spec.tokens, spec.heads});
    a.a_log = TensorRef::contiguous(a_log.data(), ElementType::fp32, {spec.heads});
    a.dt_bias = TensorRef::contiguous(dt_bias.data(), ElementType::fp32, {spec.heads, 128});
    a.initial_state = TensorRef::contiguous(state.data(), ElementType::bf16, {spec.batch, spec.heads, 128, 128});
    a.out = TensorRef::contiguous(out.data(), ElementType::bf16, shape);
    a.stream = stream;
    return a;
  }

  std::vector<std::uint8_t> result() const {
    std::vector<std::uint8_t> bytes(out.bytes() + state.bytes());
    out.download(bytes.data(), out.bytes());
    state.download(bytes.data() + out.bytes(), state.bytes());
    return bytes;
  }

  ProblemSpec spec;
  RandomProblem problem;
  DeviceArray q, k, v, g, beta, a_log, dt_bias, state, out;
  std::vector<std::uint16_t> initial_state;
};

struct Stream {
  Stream() { KDA_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING); }
  ~Stream() { runtime::driver_api().cuStreamDestroy(s); }
  CUstream s = nullptr;
};

std::vector<std::uint8_t> run_alone(DeviceProblem& p, const PrefillOptions& options) {
  p.reset();
  PrefillOptions apart = options;
  apart.prepare_overlap = false;
  const PrefillResult r = recurrent_kda_prefill(p.args(nullptr), apart);
  CHECK_FALSE(r.prepare_overlapped);
  KDA_CU(cuCtxSynchronize);
  return p.result();
}

} // namespace

TEST_CASE("gpu overlap: overlapped calls on two streams at once, and beside a long call", "[gpu][prefill][overlap]") {
  PrefillOptions options;
  options.schedule = "sm90_wgmma_c32";
  // 96 and 24 pairs (one wave each, overlapped); 768 pairs (many waves, not overlapped)
  DeviceProblem a(1, 4096, 96, 71);
  DeviceProblem b(2, 2048, 12, 72);
  DeviceProblem c(8, 1024, 96, 73);
  const std::vector<std::uint8_t> a_alone = run_alone(a, options);
  const std::vector<std::uint8_t> b_alone = run_alone(b, options);
  const std::vector<std::uint8_t> c_alone = run_alone(c, options);

  Stream s1, s2, s3;
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    a.reset();
    b.reset();
    c.reset();
    KDA_CU(cuCtxSynchronize);
    // round 0: a and b together; round 1: b, then a; round 2: a and b beside c
    if (round == 2) {
      CHECK_FALSE(recurrent_kda_prefill(c.args(s3.s), options).prepare_overlapped);
    }
    const PrefillResult first = round == 1 ? recurrent_kda_prefill(b.args(s2.s), options)
                                           : recurrent_kda_prefill(a.args(s1.s), options);
    const PrefillResult second = round == 1 ? recurrent_kda_prefill(a.args(s1.s), options)
                                            : recurrent_kda_prefill(b.args(s2.s), options);
    CHECK(first.prepare_overlapped);
    CHECK(second.prepare_overlapped);
    KDA_CU(cuCtxSynchronize);
    CHECK(a.result() == a_alone);
    CHECK(b.result() == b_alone);
    if (round == 2) {
      CHECK(c.result() == c_alone);
    }
  }
}
