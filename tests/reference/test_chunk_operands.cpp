// The per-chunk intermediates: G, masking, padding, the anchor's exponent
// range and invariance, and the fused [S | O^T] update.
#include "reference/chunk_operands.hpp"
#include "reference/chunk_update.hpp"
#include "reference/gate.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace kda::reference;
using namespace kda::reference::testing;

namespace {

constexpr GateDistribution k_gates[] = {GateDistribution::standard, GateDistribution::all_minus_8,
                                        GateDistribution::all_plus_8, GateDistribution::bias_uniform_8};

double relative_difference(const Matrix& a, const Matrix& b) {
  double scale = 0.0;
  for (double x : b.values) {
    scale = std::max(scale, std::abs(x));
  }
  return max_abs_difference(a, b) / std::max(scale, 1e-300);
}

} // namespace

TEST_CASE("anchored chunk-32 operand exponents stay within [16b, -16b]", "[reference][chunked][anchor]") {
  for (const GateDistribution gate : k_gates) {
    for (const double lower_bound : {-5.0, -1.0}) {
      RandomProblem problem(ProblemSpec{1, 75, 2, {}, gate, 0}, 901 + static_cast<std::uint64_t>(gate));
      const PrefillInputs inputs = problem.inputs();
      const double b = lower_bound * k_log2e;
      const double bound = -16.0 * b + 1e-9; // the tolerance covers rounding of the prefix sums only
      for (std::int64_t head = 0; head < 2; ++head) {
        const HeadTokens tokens(inputs, lower_bound, SequenceRange{0, 75}, head);
        for (std::int64_t begin = 0; begin < 75; begin += 32) {
          CAPTURE(static_cast<int>(gate), lower_bound, head, begin);
          const ChunkOperands ops = prepare_chunk(tokens, begin, 0.1, ChunkConfig::anchored_32());
          CHECK(ops.anchor == Approx(16.0 * b).epsilon(1e-15));
          double worst = std::abs(ops.anchor); // the restore factor 2^C_a
          for (double e : ops.kd_exponent.values) {
            worst = std::max(worst, std::abs(e));
          }
          for (double e : ops.ki_exponent.values) {
            worst = std::max(worst, std::abs(e));
          }
          for (double e : ops.kr_exponent) {
            worst = std::max(worst, std::abs(e));
          }
          CHECK(worst <= bound);
          // Unanchored chunk 32 would need up to 32 |b|: fast decay gets past 16 |b|.
          if (gate == GateDistribution::all_plus_8 && begin == 0) {
            double g_min = 0.0;
            for (double g : ops.g.values) {
              g_min = std::min(g_min, g);
            }
            CHECK(-g_min > -16.0 * b);
          }
        }
      }
    }
  }
}

TEST_CASE("the anchor leaves L, Mqk, T and the restored operands unchanged", "[reference][chunked][anchor]") {
  for (const GateDistribution gate : k_gates) {
    RandomProblem problem(ProblemSpec{1, 32, 1, {}, gate, 0}, 911 + static_cast<std::uint64_t>(gate));
    const PrefillInputs inputs = problem.inputs();
    const HeadTokens tokens(inputs, -5.0, SequenceRange{0, 32}, 0);
    const ChunkOperands anchored = prepare_chunk(tokens, 0, 0.3, ChunkConfig::anchored_32());
    const ChunkOperands plain = prepare_chunk(tokens, 0, 0.3, chunk_config(32, false));
    CAPTURE(static_cast<int>(gate));
    CHECK(plain.anchor == 0.0);
    CHECK(relative_difference(anchored.l, plain.l) <= 1e-13);
    CHECK(relative_difference(anchored.mqk, plain.mqk) <= 1e-13);
    CHECK(relative_difference(anchored.t, plain.t) <= 1e-12);
    CHECK(relative_difference(anchored.kd, plain.kd) <= 1e-13);
    CHECK(relative_difference(anchored.qd, plain.qd) <= 1e-13);
    CHECK(relative_difference(anchored.kr, plain.kr) <= 1e-13);
  }
}

TEST_CASE("chunk operands follow their definitions, with padded rows inert", "[reference][chunked]") {
  RandomProblem problem(ProblemSpec{1, 21, 1, {}, GateDistribution::standard, 0}, 921);
  const PrefillInputs inputs = problem.inputs();
  const HeadTokens tokens(inputs, -5.0, SequenceRange{0, 21}, 0);
  const double scale = 0.2;
  const ChunkOperands ops = prepare_chunk(tokens, 16, scale, ChunkConfig::anchored_32()); // rows 16..20, then padding
  REQUIRE(ops.size == 32);
  REQUIRE(ops.valid_rows == 5);
  std::vector<double> running(128, 0.0);
  for (std::int64_t i = 0; i < 32; ++i) {
    if (i < 5) {
      const PreparedToken token = tokens.token(16 + i);
      CHECK(ops.beta[static_cast<std::size_t>(i)] == token.beta);
      for (std::size_t k = 0; k < 128; ++k) {
        running[k] += token.log_decay[k] * k_log2e;
        const double expected_kd = token.k_hat[k] * std::exp2(running[k]);
        CHECK(ops.kd(i, static_cast<std::int64_t>(k)) == Approx(expected_kd).epsilon(1e-13).margin(1e-300));
        CHECK(ops.qd(i, static_cast<std::int64_t>(k)) ==
              Approx(scale * token.q_hat[k] * std::exp2(running[k])).epsilon(1e-13).margin(1e-300));
      }
    } else {
      CHECK(ops.beta[static_cast<std::size_t>(i)] == 0.0);
    }
    for (std::size_t k = 0; k < 128; ++k) {
      CHECK(ops.g(i, static_cast<std::int64_t>(k)) == running[k]); // padded rows add a2 = 0
    }
    for (std::int64_t j = 0; j < 32; ++j) {
      if (j >= i) {
        CHECK(ops.l(i, j) == 0.0); // strict lower
      }
      if (j > i || i >= 5) {
        CHECK(ops.mqk(i, j) == 0.0); // lower incl. diagonal; padded rows have q = 0
      }
      if (i >= 5) {
        CHECK(ops.l(i, j) == 0.0);
        CHECK(ops.t(i, j) == (i == j ? 1.0 : 0.0));
      }
    }
  }
  for (std::size_t k = 0; k < 128; ++k) {
    CHECK(ops.g_total[k] == running[k]);
    CHECK(ops.gamma[k] == std::exp2(running[k]));
  }
  // L and Mqk entries from their sums.
  for (std::int64_t i = 1; i < 5; ++i) {
    const PreparedToken ti = tokens.token(16 + i);
    const PreparedToken tj = tokens.token(16 + i - 1);
    double l = 0.0;
    double m = 0.0;
    for (std::int64_t k = 0; k < 128; ++k) {
      const double decay = std::exp2(ops.g(i, k) - ops.g(i - 1, k));
      l += ti.k_hat[static_cast<std::size_t>(k)] * tj.k_hat[static_cast<std::size_t>(k)] * decay;
      m += scale * ti.q_hat[static_cast<std::size_t>(k)] * tj.k_hat[static_cast<std::size_t>(k)] * decay;
    }
    CHECK(ops.l(i, i - 1) == Approx(ti.beta * l).epsilon(1e-12).margin(1e-15));
    CHECK(ops.mqk(i, i - 1) == Approx(m).epsilon(1e-12).margin(1e-15));
  }
}

TEST_CASE("the fused [S | O^T] product equals the separate updates", "[reference][chunked]") {
  RandomProblem problem(ProblemSpec{1, 30, 1, {}, GateDistribution::standard, 0}, 931);
  std::mt19937_64 rng(932);
  const OwnedState initial = random_state(StateDtype::fp32, 1, 1, rng);
  std::vector<double> state(initial.fp32.begin(), initial.fp32.end());
  const PrefillInputs inputs = problem.inputs();
  const HeadTokens tokens(inputs, -5.0, SequenceRange{0, 30}, 0);
  const ChunkOperands ops = prepare_chunk(tokens, 0, 0.1, ChunkConfig::anchored_32());
  const ChunkCarriers carriers = compute_chunk_carriers(ops, state);
  // Separate: S_new = S0 Diag(gamma) + U^T Kr, O = O0 + Mqk U.
  Matrix s_new(128, 128);
  for (std::int64_t v = 0; v < 128; ++v) {
    for (std::int64_t k = 0; k < 128; ++k) {
      double sum = state[static_cast<std::size_t>(v * 128 + k)] * ops.gamma[static_cast<std::size_t>(k)];
      for (std::int64_t j = 0; j < 32; ++j) {
        sum += carriers.u(j, v) * ops.kr(j, k);
      }
      s_new(v, k) = sum;
    }
  }
  Matrix o = multiply(ops.mqk, carriers.u);
  for (std::size_t i = 0; i < o.values.size(); ++i) {
    o.values[i] += carriers.o0.values[i];
  }
  std::vector<double> output(static_cast<std::size_t>(30 * 128), std::nan(""));
  apply_fused_update(ops, carriers, state, output);
  Matrix fused_state(128, 128);
  fused_state.values = state;
  Matrix fused_output(30, 128);
  fused_output.values = output;
  Matrix expected_output(30, 128);
  std::copy_n(o.values.begin(), 30 * 128, expected_output.values.begin());
  CHECK(relative_difference(fused_state, s_new) <= 1e-14);
  CHECK(relative_difference(fused_output, expected_output) <= 1e-14);
}
