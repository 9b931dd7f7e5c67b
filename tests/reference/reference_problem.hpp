/// \file
/// Random problems for the reference tests: owned bf16/fp32 inputs drawn from a
/// seeded std::mt19937_64 (never all zeros) and views of them as PrefillInputs.
#pragma once

#include "reference/chunk_operands.hpp"
#include "reference/prefill_inputs.hpp"
#include "reference/prefill_result.hpp"
#include "reference/sequences.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace kda::reference::testing {

enum class GateDistribution {
  standard,      // g ~ N(0,1), A_log and dt_bias ~ U[0,1)
  all_minus_8,   // g = -8 everywhere, A_log = 0, dt_bias = 0 (slow decay)
  all_plus_8,    // g = +8 everywhere, A_log = 0, dt_bias = 0 (fast decay)
  bias_uniform_8 // g = 0, A_log = 0, dt_bias ~ U[-8, 8]
};

struct ProblemSpec {
  std::int64_t batch = 1;
  std::int64_t tokens = 0;           // fixed layout: tokens per sequence
  std::int64_t heads = 1;
  std::vector<std::int64_t> seqlens; // non-empty: packed layout (batch 1, tokens = sum)
  GateDistribution gate = GateDistribution::standard;
  std::int64_t beta_row_stride = 0;  // 0: H
};

struct RandomProblem {
  RandomProblem(const ProblemSpec& problem_spec, std::uint64_t seed);

  /// Views of the owned data (fixed layout, or packed with int64 cu_seqlens).
  PrefillInputs inputs() const;
  /// The same, with int32 cu_seqlens (packed layout only).
  PrefillInputs inputs_int32() const;
  std::int64_t sequences() const;
  std::int64_t total_tokens() const { return spec.batch * spec.tokens; }

  ProblemSpec spec;
  std::vector<Bf16> q, k, v, g, beta;
  std::vector<float> a_log, dt_bias;
  std::vector<std::int64_t> cu64;
  std::vector<std::int32_t> cu32;
};

/// A random state tensor of `slots` x `heads` states, 0.25 * N(0, 1) (rounded to the dtype).
OwnedState random_state(StateDtype dtype, std::int64_t slots, std::int64_t heads, std::mt19937_64& rng);

/// Per (sequence, head): max|x - ref| / max|ref| over the output rows and over
/// the final state; returns the worst of either over all (sequence, head).
struct HeadErrors {
  double output = 0.0;
  double final_state = 0.0;
};
HeadErrors worst_relative_error(const PrefillResult& x, const PrefillResult& ref,
                                const std::vector<SequenceRange>& sequences);

/// Per (sequence, head): sqrt(sum (x - ref)^2 / sum ref^2) over the output rows
/// and over the final state (spec section 8's measure); the worst of each.
struct RmsErrors {
  double output = 0.0;
  double final_state = 0.0;
};
RmsErrors worst_relative_rms(const PrefillResult& x, const PrefillResult& ref, const std::vector<SequenceRange>& seqs);

/// A chunk configuration without emulated rounding (fp64 throughout); the
/// other fields keep ChunkConfig's defaults.
inline ChunkConfig chunk_config(std::int64_t chunk_size, bool anchored,
                                std::optional<InverseScheme> inverse = std::nullopt) {
  ChunkConfig c;
  c.chunk_size = chunk_size;
  c.anchored = anchored;
  c.inverse = inverse;
  return c;
}

bool has_nan(const std::vector<double>& values);
bool same_bits(const OwnedState& a, const OwnedState& b);

} // namespace kda::reference::testing
