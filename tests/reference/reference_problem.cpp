#include "reference_problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace kda::reference::testing {
namespace {

std::vector<Bf16> random_bf16(std::size_t count, std::mt19937_64& rng, double mean, double sigma) {
  std::normal_distribution<double> normal(mean, sigma);
  std::vector<Bf16> out(count);
  for (Bf16& x : out) {
    x = float_to_bf16(static_cast<float>(normal(rng)));
  }
  return out;
}

std::vector<float> uniform_fp32(std::size_t count, std::mt19937_64& rng, double low, double high) {
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<float> out(count);
  for (float& x : out) {
    x = static_cast<float>(uniform(rng));
  }
  return out;
}

// |x - ref|, infinite when either is NaN (so std::max cannot drop it).
double abs_difference(double x, double ref) {
  const double d = std::abs(x - ref);
  return std::isnan(d) ? HUGE_VAL : d;
}

} // namespace

RandomProblem::RandomProblem(const ProblemSpec& problem_spec, std::uint64_t seed) : spec(problem_spec) {
  std::mt19937_64 rng(seed);
  if (!spec.seqlens.empty()) {
    spec.batch = 1;
    spec.tokens = std::accumulate(spec.seqlens.begin(), spec.seqlens.end(), std::int64_t{0});
    cu64.push_back(0);
    for (std::int64_t length : spec.seqlens) {
      cu64.push_back(cu64.back() + length);
    }
    cu32.assign(cu64.begin(), cu64.end());
  }
  const std::int64_t h = spec.heads;
  const auto elements = static_cast<std::size_t>(total_tokens() * h * k_head_dim);
  q = random_bf16(elements, rng, 0.0, 1.0);
  k = random_bf16(elements, rng, 0.0, 1.0);
  v = random_bf16(elements, rng, 0.0, 1.0);
  const std::int64_t stride = spec.beta_row_stride != 0 ? spec.beta_row_stride : h;
  beta = random_bf16(static_cast<std::size_t>(std::max<std::int64_t>(total_tokens(), 1) * stride), rng, 0.0, 1.0);
  const auto bias_count = static_cast<std::size_t>(h * k_head_dim);
  switch (spec.gate) {
  case GateDistribution::standard:
    g = random_bf16(elements, rng, 0.0, 1.0);
    a_log = uniform_fp32(static_cast<std::size_t>(h), rng, 0.0, 1.0);
    dt_bias = uniform_fp32(bias_count, rng, 0.0, 1.0);
    break;
  case GateDistribution::all_minus_8:
  case GateDistribution::all_plus_8:
    g.assign(elements, float_to_bf16(spec.gate == GateDistribution::all_plus_8 ? 8.0f : -8.0f));
    a_log.assign(static_cast<std::size_t>(h), 0.0f);
    dt_bias.assign(bias_count, 0.0f);
    break;
  case GateDistribution::bias_uniform_8:
    g.assign(elements, Bf16{0});
    a_log.assign(static_cast<std::size_t>(h), 0.0f);
    dt_bias = uniform_fp32(bias_count, rng, -8.0, 8.0);
    break;
  }
}

PrefillInputs RandomProblem::inputs() const {
  PrefillInputs in;
  in.batch = spec.batch;
  in.tokens = spec.tokens;
  in.heads = spec.heads;
  in.q = q;
  in.k = k;
  in.v = v;
  in.g = g;
  in.beta = beta;
  in.beta_row_stride = spec.beta_row_stride;
  in.a_log = a_log;
  in.dt_bias = dt_bias;
  if (!cu64.empty()) {
    in.cu_seqlens = std::span<const std::int64_t>(cu64);
  }
  return in;
}

PrefillInputs RandomProblem::inputs_int32() const {
  PrefillInputs in = inputs();
  in.cu_seqlens = std::span<const std::int32_t>(cu32);
  return in;
}

std::int64_t RandomProblem::sequences() const {
  return spec.seqlens.empty() ? spec.batch : static_cast<std::int64_t>(spec.seqlens.size());
}

OwnedState random_state(StateDtype dtype, std::int64_t slots, std::int64_t heads, std::mt19937_64& rng) {
  OwnedState state = OwnedState::poisoned(dtype, slots, heads);
  std::normal_distribution<double> normal(0.0, 0.25);
  for (Bf16& x : state.bf16) {
    x = float_to_bf16(static_cast<float>(normal(rng)));
  }
  for (float& x : state.fp32) {
    x = static_cast<float>(normal(rng));
  }
  return state;
}

HeadErrors worst_relative_error(const PrefillResult& x, const PrefillResult& ref,
                                const std::vector<SequenceRange>& sequences) {
  HeadErrors worst;
  const std::int64_t heads = ref.heads;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    for (std::int64_t h = 0; h < heads; ++h) {
      double diff = 0.0;
      double scale = 0.0;
      for (std::int64_t t = 0; t < sequences[i].length; ++t) {
        const auto base = static_cast<std::size_t>(((sequences[i].token_begin + t) * heads + h) * k_head_dim);
        for (std::size_t e = 0; e < static_cast<std::size_t>(k_head_dim); ++e) {
          diff = std::max(diff, abs_difference(x.output[base + e], ref.output[base + e]));
          scale = std::max(scale, std::abs(ref.output[base + e]));
        }
      }
      if (sequences[i].length > 0) {
        worst.output = std::max(worst.output, diff / scale);
      }
      diff = 0.0;
      scale = 0.0;
      const std::size_t base = state_index(static_cast<std::int64_t>(i), h, heads, 0, 0);
      for (std::size_t e = 0; e < static_cast<std::size_t>(k_state_elements); ++e) {
        diff = std::max(diff, abs_difference(x.final_state[base + e], ref.final_state[base + e]));
        scale = std::max(scale, std::abs(ref.final_state[base + e]));
      }
      if (scale > 0.0) {
        worst.final_state = std::max(worst.final_state, diff / scale);
      }
    }
  }
  return worst;
}

RmsErrors worst_relative_rms(const PrefillResult& x, const PrefillResult& ref, const std::vector<SequenceRange>& seqs) {
  RmsErrors worst;
  const std::int64_t heads = ref.heads;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    for (std::int64_t h = 0; h < heads; ++h) {
      double err = 0.0;
      double norm = 0.0;
      for (std::int64_t t = 0; t < seqs[i].length; ++t) {
        const auto base = static_cast<std::size_t>(((seqs[i].token_begin + t) * heads + h) * k_head_dim);
        for (std::size_t e = 0; e < static_cast<std::size_t>(k_head_dim); ++e) {
          err += (x.output[base + e] - ref.output[base + e]) * (x.output[base + e] - ref.output[base + e]);
          norm += ref.output[base + e] * ref.output[base + e];
        }
      }
      if (norm > 0.0) {
        worst.output = std::max(worst.output, std::sqrt(err / norm));
      }
      err = 0.0;
      norm = 0.0;
      const std::size_t base = state_index(static_cast<std::int64_t>(i), h, heads, 0, 0);
      for (std::size_t e = 0; e < static_cast<std::size_t>(k_state_elements); ++e) {
        err += (x.final_state[base + e] - ref.final_state[base + e]) * (x.final_state[base + e] - ref.final_state[base + e]);
        norm += ref.final_state[base + e] * ref.final_state[base + e];
      }
      if (norm > 0.0) {
        worst.final_state = std::max(worst.final_state, std::sqrt(err / norm));
      }
    }
  }
  return worst;
}

bool has_nan(const std::vector<double>& values) {
  return std::any_of(values.begin(), values.end(), [](double x) { return std::isnan(x); });
}

bool same_bits(const OwnedState& a, const OwnedState& b) {
  if (a.dtype != b.dtype || a.bf16.size() != b.bf16.size() || a.fp32.size() != b.fp32.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.bf16.size(); ++i) {
    if (a.bf16[i].bits != b.bf16[i].bits) {
      return false;
    }
  }
  return a.fp32.empty() || std::memcmp(a.fp32.data(), b.fp32.data(), a.fp32.size() * sizeof(float)) == 0;
}

} // namespace kda::reference::testing
