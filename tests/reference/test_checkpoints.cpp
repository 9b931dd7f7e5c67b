// Native checkpoints (spec 1.5): row counts, starts, contents, bf16 rows.
#include "compiler/errors.hpp"
#include "reference/checkpoints.hpp"
#include "reference/chunked_prefill.hpp"
#include "reference/token_reference.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

using namespace kda::reference;
using namespace kda::reference::testing;

namespace {

constexpr kda::Bf16 k_bf16_poison{0x7fc0};

// The fp64 final state of the prefix of `length` tokens of sequence `sequence`
// (a fixed-layout call of one sequence), starting from that sequence's initial state.
std::vector<double> prefix_final_state(const RandomProblem& problem, const OwnedState& initial, std::int64_t sequence,
                                       std::int64_t length) {
  const std::int64_t heads = problem.spec.heads;
  const std::int64_t begin = problem.cu64[static_cast<std::size_t>(sequence)];
  const auto row = static_cast<std::size_t>(begin * heads * k_head_dim);
  const auto count = static_cast<std::size_t>(length * heads * k_head_dim);
  PrefillInputs inputs = problem.inputs();
  inputs.cu_seqlens = std::monostate{};
  inputs.tokens = length;
  inputs.q = inputs.q.subspan(row, count);
  inputs.k = inputs.k.subspan(row, count);
  inputs.v = inputs.v.subspan(row, count);
  inputs.g = inputs.g.subspan(row, count);
  inputs.beta = inputs.beta.subspan(static_cast<std::size_t>(begin * heads));
  OwnedState slot = OwnedState::poisoned(initial.dtype, 1, heads);
  for (std::size_t e = 0; e < static_cast<std::size_t>(heads * k_state_elements); ++e) {
    const std::size_t from = state_index(sequence, 0, heads, 0, 0) + e;
    if (initial.dtype == StateDtype::bf16) {
      slot.bf16[e] = initial.bf16[from];
    } else {
      slot.fp32[e] = initial.fp32[from];
    }
  }
  inputs.initial_state = slot.view(1);
  return run_reference_prefill(inputs, {}).final_state;
}

} // namespace

TEST_CASE("checkpoint starts count ceil(L / P) rows per sequence", "[reference][checkpoints]") {
  const std::vector<SequenceRange> sequences{{0, 0}, {0, 1}, {1, 16}, {17, 17}, {34, 48}, {82, 100}};
  CHECK(compute_checkpoint_cu_starts(sequences, 16) == std::vector<std::int64_t>{0, 0, 1, 2, 4, 7, 14});
  CHECK(compute_checkpoint_cu_starts(sequences, 32) == std::vector<std::int64_t>{0, 0, 1, 2, 3, 5, 9});
  CHECK(checkpoint_row_count(0, 64) == 0);
  CHECK(checkpoint_row_count(64, 64) == 1);
  CHECK(checkpoint_row_count(65, 64) == 2);
}

TEST_CASE("checkpoint rows are the states before each interval", "[reference][checkpoints]") {
  const std::vector<std::int64_t> seqlens{40, 0, 16, 70, 1};
  RandomProblem problem(ProblemSpec{1, 0, 2, seqlens, GateDistribution::standard, 0}, 501);
  std::mt19937_64 rng(502);
  const OwnedState initial = random_state(StateDtype::fp32, 5, 2, rng);
  OwnedState state = initial;
  const std::vector<std::int64_t> starts = compute_checkpoint_cu_starts(problem.inputs(), 16);
  REQUIRE(starts == std::vector<std::int64_t>{0, 3, 3, 4, 9, 10});
  // The bf16 buffer has one spare row that must stay poisoned.
  std::vector<kda::Bf16> rows(static_cast<std::size_t>((starts.back() + 1) * 2 * k_state_elements), k_bf16_poison);

  PrefillInputs inputs = problem.inputs();
  inputs.initial_state = state.view(5);
  PrefillOptions options;
  options.checkpoints = CheckpointRequest{16, starts, rows};
  const PrefillResult result = run_reference_prefill(inputs, options);
  REQUIRE(result.checkpoint_cu_starts == starts);
  REQUIRE(result.checkpoints.size() == static_cast<std::size_t>(starts.back() * 2 * k_state_elements));
  CHECK_FALSE(has_nan(result.checkpoints));

  for (std::size_t i = 0; i < seqlens.size(); ++i) {
    for (std::int64_t r = 0; r < starts[i + 1] - starts[i]; ++r) {
      CAPTURE(i, r);
      const std::int64_t global_row = starts[i] + r;
      const std::vector<double> expected = prefix_final_state(problem, initial, static_cast<std::int64_t>(i), r * 16);
      for (std::int64_t h = 0; h < 2; ++h) {
        bool same = true;
        bool rounded = true;
        for (std::int64_t e = 0; e < k_state_elements; ++e) {
          const double want = expected[state_index(0, h, 2, 0, 0) + static_cast<std::size_t>(e)];
          const std::size_t at = state_index(global_row, h, 2, 0, 0) + static_cast<std::size_t>(e);
          same = same && result.checkpoints[at] == want;
          rounded = rounded && rows[at].bits == kda::float_to_bf16(static_cast<float>(want)).bits;
          if (r == 0) { // row 0 is the initial state itself
            same = same && want == initial.load(state_index(static_cast<std::int64_t>(i), h, 2, 0, 0) +
                                                static_cast<std::size_t>(e));
          }
        }
        CHECK(same);
        CHECK(rounded);
      }
    }
  }
  const std::size_t spare = static_cast<std::size_t>(starts.back() * 2 * k_state_elements);
  CHECK(std::all_of(rows.begin() + static_cast<std::ptrdiff_t>(spare), rows.end(),
                    [](kda::Bf16 x) { return x.bits == k_bf16_poison.bits; }));
}

TEST_CASE("checkpoints without an initial state start from zeros", "[reference][checkpoints]") {
  RandomProblem problem(ProblemSpec{2, 33, 1, {}, GateDistribution::standard, 0}, 511);
  PrefillOptions options;
  options.checkpoints.every_n_tokens = 32;
  const PrefillResult result = run_reference_prefill(problem.inputs(), options);
  REQUIRE(result.checkpoint_cu_starts == std::vector<std::int64_t>{0, 2, 4});
  for (std::int64_t e = 0; e < k_state_elements; ++e) {
    CHECK(result.checkpoints[state_index(0, 0, 1, 0, 0) + static_cast<std::size_t>(e)] == 0.0);
    CHECK(result.checkpoints[state_index(2, 0, 1, 0, 0) + static_cast<std::size_t>(e)] == 0.0);
  }
  CHECK(result.checkpoints[state_index(1, 0, 1, 4, 4)] != 0.0);
}

TEST_CASE("chunked checkpoints match the token reference", "[reference][checkpoints][chunked]") {
  RandomProblem problem(ProblemSpec{1, 0, 2, {70, 0, 64, 5}, GateDistribution::standard, 0}, 521);
  std::mt19937_64 rng(522);
  const OwnedState initial = random_state(StateDtype::bf16, 4, 2, rng);
  for (const ChunkConfig& config : {ChunkConfig::unanchored_16(), ChunkConfig::anchored_32()}) {
    CAPTURE(config.chunk_size);
    OwnedState token_state = initial;
    OwnedState chunk_state = initial;
    PrefillOptions options;
    options.checkpoints.every_n_tokens = 32;
    PrefillInputs inputs = problem.inputs();
    inputs.initial_state = token_state.view(4);
    const PrefillResult expected = run_reference_prefill(inputs, options);
    inputs.initial_state = chunk_state.view(4);
    const PrefillResult result = run_chunked_prefill(inputs, options, config);
    REQUIRE(result.checkpoints.size() == expected.checkpoints.size());
    for (std::int64_t row = 0; row < expected.checkpoint_cu_starts.back(); ++row) {
      for (std::int64_t h = 0; h < 2; ++h) {
        double diff = 0.0;
        double scale = 0.0;
        for (std::size_t e = 0; e < static_cast<std::size_t>(k_state_elements); ++e) {
          const std::size_t at = state_index(row, h, 2, 0, 0) + e;
          diff = std::max(diff, std::abs(result.checkpoints[at] - expected.checkpoints[at]));
          scale = std::max(scale, std::abs(expected.checkpoints[at]));
        }
        CAPTURE(row, h);
        CHECK(diff <= 1e-9 * scale);
      }
    }
    CHECK_FALSE(has_nan(result.checkpoints));
  }
}

TEST_CASE("bad checkpoint requests are refused naming the argument", "[reference][checkpoints][errors]") {
  RandomProblem problem(ProblemSpec{1, 0, 1, {20, 50}, GateDistribution::standard, 0}, 531);
  const auto argument_of = [&](const PrefillOptions& options, const ChunkConfig* config) -> std::string {
    try {
      if (config != nullptr) {
        run_chunked_prefill(problem.inputs(), options, *config);
      } else {
        run_reference_prefill(problem.inputs(), options);
      }
    } catch (const kda::TensorError& error) {
      return error.argument();
    }
    return "(no error)";
  };
  PrefillOptions options;
  options.checkpoints.every_n_tokens = 24;
  CHECK(argument_of(options, nullptr) == "checkpoint_every_n_tokens");
  options.checkpoints.every_n_tokens = -16;
  CHECK(argument_of(options, nullptr) == "checkpoint_every_n_tokens");
  options.checkpoints.every_n_tokens = 48;
  const ChunkConfig chunk32 = ChunkConfig::anchored_32();
  CHECK(argument_of(options, &chunk32) == "checkpoint_every_n_tokens"); // 32 does not divide 48
  const ChunkConfig chunk16 = ChunkConfig::unanchored_16();
  CHECK(argument_of(options, &chunk16) == "(no error)");
  const std::vector<std::int64_t> right_starts{0, 1, 3};
  options.checkpoints.cu_starts = right_starts; // 20 and 50 tokens at 48 need 1 and 2 rows: {0, 1, 3} is right
  CHECK(argument_of(options, nullptr) == "(no error)");
  const std::vector<std::int64_t> bad_starts{0, 2, 4};
  options.checkpoints.cu_starts = bad_starts;
  CHECK(argument_of(options, nullptr) == "checkpoint_cu_starts");
  const std::vector<std::int64_t> short_starts{0, 1};
  options.checkpoints.cu_starts = short_starts;
  CHECK(argument_of(options, nullptr) == "checkpoint_cu_starts");
  options.checkpoints.cu_starts = {};
  std::vector<kda::Bf16> small(static_cast<std::size_t>(2 * k_state_elements));
  options.checkpoints.rows = small;
  CHECK(argument_of(options, nullptr) == "state_checkpoints");
  options.checkpoints.every_n_tokens = 0; // rows without an interval
  CHECK(argument_of(options, nullptr) == "checkpoint_every_n_tokens");
}
