// The CPU chunked implementation against the fp64 token reference:
// max|x - ref| <= 1e-9 max|ref| per (sequence, head), output and final state.
#include "reference/chunked_prefill.hpp"
#include "reference/token_reference.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

using namespace kda::reference;
using namespace kda::reference::testing;

namespace {

constexpr double k_tolerance = 1e-9;
constexpr GateDistribution k_gates[] = {GateDistribution::standard, GateDistribution::all_minus_8,
                                        GateDistribution::all_plus_8, GateDistribution::bias_uniform_8};

struct Case {
  ProblemSpec spec;
  std::optional<double> lower_bound;
  ChunkConfig config;
  bool with_state = false;
  std::uint64_t seed = 0;
};

void check_against_token(const Case& c) {
  const RandomProblem problem(c.spec, c.seed);
  const std::int64_t n = problem.sequences();
  std::mt19937_64 rng(c.seed ^ 0x5eedULL);
  const OwnedState initial = random_state(StateDtype::fp32, n, c.spec.heads, rng);
  OwnedState token_state = initial;
  OwnedState chunk_state = initial;
  PrefillOptions options;
  options.lower_bound = c.lower_bound;
  options.output_final_state = true;
  PrefillInputs inputs = problem.inputs();
  if (c.with_state) {
    inputs.initial_state = token_state.view(n);
  }
  const PrefillResult expected = run_reference_prefill(inputs, options);
  if (c.with_state) {
    inputs.initial_state = chunk_state.view(n);
  }
  const PrefillResult result = run_chunked_prefill(inputs, options, c.config);
  REQUIRE_FALSE(has_nan(result.output));
  REQUIRE_FALSE(has_nan(result.final_state));
  const HeadErrors errors = worst_relative_error(result, expected, sequence_ranges(inputs));
  CAPTURE(errors.output, errors.final_state);
  CHECK(errors.output <= k_tolerance);
  CHECK(errors.final_state <= k_tolerance);
}

std::string describe(const Case& c) {
  std::string lengths;
  for (std::int64_t length : c.spec.seqlens) {
    lengths += std::to_string(length) + " ";
  }
  return "B " + std::to_string(c.spec.batch) + " T " + std::to_string(c.spec.tokens) + " seqlens [" + lengths +
         "] H " + std::to_string(c.spec.heads) + " gate " + std::to_string(static_cast<int>(c.spec.gate)) + " lb " +
         (c.lower_bound ? std::to_string(*c.lower_bound) : "none") + " chunk " +
         std::to_string(c.config.chunk_size) + (c.config.anchored ? " anchored" : " plain") + " state " +
         std::to_string(c.with_state);
}

} // namespace

TEST_CASE("chunked matches token on fixed layouts with ragged tails", "[reference][chunked]") {
  const std::int64_t lengths[] = {1, 15, 17, 33, 100, 257};
  const std::int64_t heads[] = {1, 3, 12};
  std::uint64_t seed = 1000;
  int index = 0;
  for (const GateDistribution gate : k_gates) {
    for (const double lower_bound : {-5.0, -1.0}) {
      for (const ChunkConfig& config : {ChunkConfig::unanchored_16(), ChunkConfig::anchored_32()}) {
        for (const bool with_state : {false, true}) {
          // Cycle the shapes so every length meets every head count; keep the big ones rare.
          const std::int64_t t = lengths[index % 6];
          std::int64_t h = heads[(index / 6 + index) % 3];
          if (t == 257 && h == 12) {
            h = (index % 12 == 5) ? 12 : 3;
          }
          ++index;
          const Case c{ProblemSpec{t < 33 ? 2 : 1, t, h, {}, gate, 0}, lower_bound, config, with_state, ++seed};
          INFO(describe(c));
          check_against_token(c);
        }
      }
    }
  }
}

TEST_CASE("chunked matches token on packed layouts with empty sequences", "[reference][chunked]") {
  const std::vector<std::int64_t> seqlens{0, 1, 15, 17, 33, 0, 100, 257, 0};
  std::uint64_t seed = 2000;
  for (const GateDistribution gate : k_gates) {
    for (const ChunkConfig& config : {ChunkConfig::unanchored_16(), ChunkConfig::anchored_32()}) {
      const Case c{ProblemSpec{1, 0, 2, seqlens, gate, 0}, -5.0, config, gate != GateDistribution::standard, ++seed};
      INFO(describe(c));
      check_against_token(c);
    }
  }
}

TEST_CASE("chunked matches token at H = 12 with T = 257", "[reference][chunked]") {
  const Case c{ProblemSpec{1, 257, 12, {}, GateDistribution::standard, 0}, -5.0, ChunkConfig::anchored_32(), true,
               3001};
  INFO(describe(c));
  check_against_token(c);
}

TEST_CASE("chunked matches token for the gate without lower bound", "[reference][chunked]") {
  std::uint64_t seed = 4000;
  for (const GateDistribution gate : k_gates) {
    for (const ChunkConfig& config : {ChunkConfig::unanchored_16(), chunk_config(32, false)}) {
      const Case c{ProblemSpec{1, 0, 2, {47, 0, 64}, gate, 0}, std::nullopt, config, true, ++seed};
      INFO(describe(c));
      check_against_token(c);
    }
  }
}

TEST_CASE("chunked matches token with any inverse scheme and chunk 64", "[reference][chunked]") {
  std::uint64_t seed = 5000;
  const ChunkConfig configs[] = {
      chunk_config(16, false, InverseScheme::blocked), chunk_config(16, true, InverseScheme::forward_substitution),
      chunk_config(32, true, InverseScheme::neumann), chunk_config(64, true)};
  for (const ChunkConfig& config : configs) {
    const Case c{ProblemSpec{1, 0, 3, {70, 129}, GateDistribution::all_plus_8, 0}, -5.0, config, true, ++seed};
    INFO(describe(c));
    check_against_token(c);
  }
}
