// The token reference against hand formulas on sparse keys (T = 1 and 2).
#include "reference/gate.hpp"
#include "reference/token_reference.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace kda::reference;
using namespace kda::reference::testing;
using kda::Bf16;

namespace {

double value(Bf16 x) {
  return static_cast<double>(kda::bf16_to_float(x));
}

// Sets q, k of token t (head 0) to multiples of unit vectors: k = key_scale e_key, q = 0.5 e_0 + 2 e_1.
void make_sparse(RandomProblem& problem, std::int64_t t, std::int64_t key, float key_scale) {
  const auto base = static_cast<std::size_t>(t * problem.spec.heads * k_head_dim);
  for (std::int64_t i = 0; i < k_head_dim; ++i) {
    problem.k[base + static_cast<std::size_t>(i)] = kda::float_to_bf16(i == key ? key_scale : 0.0f);
    problem.q[base + static_cast<std::size_t>(i)] = kda::float_to_bf16(i == 0 ? 0.5f : (i == 1 ? 2.0f : 0.0f));
  }
}

double decay(const RandomProblem& problem, std::int64_t t, std::int64_t channel, double lower_bound) {
  const auto at = static_cast<std::size_t>(t * problem.spec.heads * k_head_dim + channel);
  const double x = std::exp(static_cast<double>(problem.a_log[0])) *
                   (value(problem.g[at]) + static_cast<double>(problem.dt_bias[static_cast<std::size_t>(channel)]));
  return std::exp(lower_bound / (1.0 + std::exp(-x)));
}

} // namespace

TEST_CASE("token reference matches hand formulas for T = 1 with an initial state", "[reference][token]") {
  RandomProblem problem(ProblemSpec{1, 1, 1, {}, GateDistribution::standard, 0}, 101);
  make_sparse(problem, 0, 0, 3.0f);
  std::mt19937_64 rng(102);
  OwnedState state = random_state(StateDtype::fp32, 1, 1, rng);
  const OwnedState initial = state;
  PrefillInputs inputs = problem.inputs();
  inputs.initial_state = state.view(1);
  PrefillOptions options;
  options.scale = 0.125;
  const PrefillResult result = run_reference_prefill(inputs, options);

  const double c = 3.0 / std::sqrt(9.0 + 1e-6);                    // k_hat = c e_0
  const double qn = 1.0 / std::sqrt(0.25 + 4.0 + 1e-6);              // q_hat = qn (0.5 e_0 + 2 e_1)
  const double beta = 1.0 / (1.0 + std::exp(-value(problem.beta[0])));
  for (std::int64_t v = 0; v < k_head_dim; ++v) {
    const auto s0 = [&](std::int64_t k) { return static_cast<double>(initial.fp32[state_index(0, 0, 1, v, k)]); };
    const double col0 = s0(0) * decay(problem, 0, 0, -5.0);
    const double col1 = s0(1) * decay(problem, 0, 1, -5.0);
    const double u = beta * (value(problem.v[static_cast<std::size_t>(v)]) - col0 * c);
    const double new_col0 = col0 + u * c;
    const double expected_out = 0.125 * qn * (0.5 * new_col0 + 2.0 * col1);
    CHECK(result.output[static_cast<std::size_t>(v)] == Approx(expected_out).epsilon(1e-13).margin(1e-15));
    CHECK(result.final_state[state_index(0, 0, 1, v, 0)] == Approx(new_col0).epsilon(1e-13).margin(1e-15));
    for (std::int64_t k = 1; k < k_head_dim; ++k) {
      CHECK(result.final_state[state_index(0, 0, 1, v, k)] ==
            Approx(s0(k) * decay(problem, 0, k, -5.0)).epsilon(1e-13).margin(1e-15));
    }
  }
}

TEST_CASE("token reference matches hand formulas for T = 2 from a zero state", "[reference][token]") {
  for (const bool same_key : {false, true}) {
    CAPTURE(same_key);
    RandomProblem problem(ProblemSpec{1, 2, 1, {}, GateDistribution::standard, 0}, same_key ? 201 : 202);
    make_sparse(problem, 0, 0, 3.0f);
    make_sparse(problem, 1, same_key ? 0 : 1, 4.0f);
    PrefillOptions options;
    options.lower_bound = -1.0;
    const PrefillResult result = run_reference_prefill(problem.inputs(), options);

    const double scale = 1.0 / std::sqrt(128.0);
    const double c1 = 3.0 / std::sqrt(9.0 + 1e-6);
    const double c2 = 4.0 / std::sqrt(16.0 + 1e-6);
    const double qn = 1.0 / std::sqrt(0.25 + 4.0 + 1e-6);
    const double beta1 = 1.0 / (1.0 + std::exp(-value(problem.beta[0])));
    const double beta2 = 1.0 / (1.0 + std::exp(-value(problem.beta[1])));
    const double alpha0 = decay(problem, 1, 0, -1.0); // token 2's decay of channel 0
    for (std::int64_t v = 0; v < k_head_dim; ++v) {
      const double v1 = value(problem.v[static_cast<std::size_t>(v)]);
      const double v2 = value(problem.v[static_cast<std::size_t>(k_head_dim + v)]);
      // Token 1: S = beta1 v1 (c1 e_0)^T, o1 = scale S q_hat.
      const double col0_t1 = beta1 * v1 * c1;
      CHECK(result.output[static_cast<std::size_t>(v)] == Approx(scale * qn * 0.5 * col0_t1).epsilon(1e-13));
      double col0 = alpha0 * col0_t1;
      double col1 = 0.0;
      if (same_key) { // delta rule: the prediction removes what the state already holds
        col0 += beta2 * (v2 - col0 * c2) * c2;
      } else {
        col1 = beta2 * v2 * c2;
      }
      const double out2 = scale * qn * (0.5 * col0 + 2.0 * col1);
      CHECK(result.output[static_cast<std::size_t>(k_head_dim + v)] == Approx(out2).epsilon(1e-13).margin(1e-16));
      CHECK(result.final_state[state_index(0, 0, 1, v, 0)] == Approx(col0).epsilon(1e-13).margin(1e-16));
      CHECK(result.final_state[state_index(0, 0, 1, v, 1)] == Approx(col1).epsilon(1e-13).margin(1e-16));
      CHECK(result.final_state[state_index(0, 0, 1, v, 2)] == 0.0);
    }
  }
}

TEST_CASE("the gate without lower bound uses softplus outside exp(A_log)", "[reference][token]") {
  RandomProblem problem(ProblemSpec{1, 1, 1, {}, GateDistribution::standard, 0}, 301);
  make_sparse(problem, 0, 0, 1.0f);
  std::mt19937_64 rng(302);
  OwnedState state = random_state(StateDtype::bf16, 1, 1, rng);
  const OwnedState initial = state;
  PrefillInputs inputs = problem.inputs();
  inputs.initial_state = state.view(1);
  PrefillOptions options;
  options.lower_bound = std::nullopt;
  const PrefillResult result = run_reference_prefill(inputs, options);
  for (std::int64_t k = 1; k < k_head_dim; ++k) {
    const auto at = static_cast<std::size_t>(k);
    const double y = value(problem.g[at]) + static_cast<double>(problem.dt_bias[at]);
    const double alpha = std::exp(-std::exp(static_cast<double>(problem.a_log[0])) * softplus(y));
    const double s0 = static_cast<double>(kda::bf16_to_float(initial.bf16[state_index(0, 0, 1, 5, k)]));
    CHECK(result.final_state[state_index(0, 0, 1, 5, k)] == Approx(s0 * alpha).epsilon(1e-13).margin(1e-300));
  }
}
