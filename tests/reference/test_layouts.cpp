// Layouts (spec 1.5): fixed vs packed, int32 vs int64 offsets, zero-length
// sequences, strided beta, and independence of heads and sequences.
#include "reference/sequences.hpp"
#include "reference/token_reference.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

using namespace kda::reference;
using namespace kda::reference::testing;

TEST_CASE("fixed and packed layouts give identical results", "[reference][layout]") {
  RandomProblem fixed(ProblemSpec{3, 21, 2, {}, GateDistribution::standard, 0}, 601);
  std::vector<std::int64_t> offsets{0, 21, 42, 63};
  std::mt19937_64 rng(602);
  const OwnedState initial = random_state(StateDtype::bf16, 3, 2, rng);
  OwnedState fixed_state = initial;
  OwnedState packed_state = initial;

  PrefillInputs inputs = fixed.inputs();
  inputs.initial_state = fixed_state.view(3);
  const PrefillResult from_fixed = run_reference_prefill(inputs, {});
  inputs.batch = 1;
  inputs.tokens = 63;
  inputs.cu_seqlens = std::span<const std::int64_t>(offsets);
  inputs.initial_state = packed_state.view(3);
  const PrefillResult from_packed = run_reference_prefill(inputs, {});
  CHECK(from_fixed.output == from_packed.output);
  CHECK(from_fixed.final_state == from_packed.final_state);
  CHECK(same_bits(fixed_state, packed_state));
  CHECK_FALSE(has_nan(from_fixed.output));
}

TEST_CASE("int32 and int64 cu_seqlens give identical results", "[reference][layout]") {
  RandomProblem problem(ProblemSpec{1, 0, 3, {5, 0, 17, 1}, GateDistribution::standard, 0}, 611);
  PrefillOptions options;
  options.output_final_state = true;
  const PrefillResult from_int64 = run_reference_prefill(problem.inputs(), options);
  const PrefillResult from_int32 = run_reference_prefill(problem.inputs_int32(), options);
  CHECK(from_int64.output == from_int32.output);
  CHECK(from_int64.final_state == from_int32.final_state);
  CHECK(same_bits(*from_int64.allocated_final_state, *from_int32.allocated_final_state));
}

TEST_CASE("zero-length sequences keep their state and produce no rows", "[reference][layout]") {
  const std::vector<std::int64_t> seqlens{0, 5, 0, 0, 9, 0};
  RandomProblem problem(ProblemSpec{1, 0, 2, seqlens, GateDistribution::standard, 0}, 621);
  std::mt19937_64 rng(622);
  const OwnedState initial = random_state(StateDtype::fp32, 6, 2, rng);
  OwnedState state = initial;
  PrefillInputs inputs = problem.inputs();
  inputs.initial_state = state.view(6);
  const PrefillResult result = run_reference_prefill(inputs, {});
  CHECK(result.output.size() == static_cast<std::size_t>(14 * 2 * k_head_dim));
  CHECK_FALSE(has_nan(result.output));
  for (std::int64_t i = 0; i < 6; ++i) {
    const bool empty = seqlens[static_cast<std::size_t>(i)] == 0;
    const std::size_t base = state_index(i, 0, 2, 0, 0);
    bool unchanged = true;
    bool fp64_is_initial = true;
    for (std::size_t e = 0; e < static_cast<std::size_t>(2 * k_state_elements); ++e) {
      unchanged = unchanged && state.fp32[base + e] == initial.fp32[base + e];
      fp64_is_initial = fp64_is_initial && result.final_state[base + e] == initial.load(base + e);
    }
    CAPTURE(i);
    CHECK(unchanged == empty);
    CHECK(fp64_is_initial == empty);
  }

  // The nonempty sequences alone give the same rows and states.
  RandomProblem compact = problem;
  compact.cu64 = {0, 5, 14};
  OwnedState compact_state = OwnedState::poisoned(StateDtype::fp32, 2, 2);
  std::copy_n(initial.fp32.begin() + static_cast<std::ptrdiff_t>(state_index(1, 0, 2, 0, 0)), 2 * k_state_elements,
              compact_state.fp32.begin());
  std::copy_n(initial.fp32.begin() + static_cast<std::ptrdiff_t>(state_index(4, 0, 2, 0, 0)), 2 * k_state_elements,
              compact_state.fp32.begin() + 2 * k_state_elements);
  PrefillInputs compact_inputs = compact.inputs();
  compact_inputs.initial_state = compact_state.view(2);
  const PrefillResult expected = run_reference_prefill(compact_inputs, {});
  CHECK(result.output == expected.output);
  CHECK(std::equal(expected.final_state.begin(), expected.final_state.begin() + 2 * k_state_elements,
                   result.final_state.begin() + static_cast<std::ptrdiff_t>(state_index(1, 0, 2, 0, 0))));
  CHECK(std::equal(expected.final_state.begin() + 2 * k_state_elements, expected.final_state.end(),
                   result.final_state.begin() + static_cast<std::ptrdiff_t>(state_index(4, 0, 2, 0, 0))));
}

TEST_CASE("a token-row-strided beta reads the same values", "[reference][layout]") {
  RandomProblem strided(ProblemSpec{2, 9, 3, {}, GateDistribution::standard, 7}, 631);
  RandomProblem dense = strided;
  dense.spec.beta_row_stride = 0;
  dense.beta.clear();
  for (std::int64_t row = 0; row < 18; ++row) {
    for (std::int64_t h = 0; h < 3; ++h) {
      dense.beta.push_back(strided.beta[static_cast<std::size_t>(row * 7 + h)]);
    }
  }
  const PrefillResult a = run_reference_prefill(strided.inputs(), {});
  const PrefillResult b = run_reference_prefill(dense.inputs(), {});
  CHECK(a.output == b.output);
  CHECK(a.final_state == b.final_state);
}

TEST_CASE("heads are independent", "[reference][layout]") {
  RandomProblem problem(ProblemSpec{1, 0, 3, {11, 6}, GateDistribution::standard, 0}, 641);
  const PrefillResult before = run_reference_prefill(problem.inputs(), {});
  // Change everything that belongs to head 1.
  RandomProblem other(problem.spec, 642);
  for (std::int64_t row = 0; row < problem.total_tokens(); ++row) {
    for (std::int64_t i = 0; i < k_head_dim; ++i) {
      const auto at = static_cast<std::size_t>((row * 3 + 1) * k_head_dim + i);
      problem.q[at] = other.q[at];
      problem.k[at] = other.k[at];
      problem.v[at] = other.v[at];
      problem.g[at] = other.g[at];
    }
    problem.beta[static_cast<std::size_t>(row * 3 + 1)] = other.beta[static_cast<std::size_t>(row * 3 + 1)];
  }
  problem.a_log[1] = other.a_log[1];
  std::copy_n(other.dt_bias.begin() + k_head_dim, k_head_dim, problem.dt_bias.begin() + k_head_dim);
  const PrefillResult after = run_reference_prefill(problem.inputs(), {});
  for (std::int64_t row = 0; row < problem.total_tokens(); ++row) {
    for (std::int64_t h = 0; h < 3; ++h) {
      const auto base = static_cast<std::size_t>((row * 3 + h) * k_head_dim);
      const bool same = std::equal(before.output.begin() + static_cast<std::ptrdiff_t>(base),
                                   before.output.begin() + static_cast<std::ptrdiff_t>(base) + k_head_dim,
                                   after.output.begin() + static_cast<std::ptrdiff_t>(base));
      CAPTURE(row, h);
      CHECK(same == (h != 1));
    }
  }
}

TEST_CASE("sequences are independent", "[reference][layout]") {
  RandomProblem problem(ProblemSpec{1, 0, 2, {8, 13, 4}, GateDistribution::standard, 0}, 651);
  PrefillOptions options;
  options.output_final_state = true;
  const PrefillResult before = run_reference_prefill(problem.inputs(), options);
  RandomProblem other(problem.spec, 652);
  const auto first = static_cast<std::size_t>(8 * 2 * k_head_dim);
  const auto last = static_cast<std::size_t>(21 * 2 * k_head_dim);
  std::copy(other.q.begin() + static_cast<std::ptrdiff_t>(first), other.q.begin() + static_cast<std::ptrdiff_t>(last),
            problem.q.begin() + static_cast<std::ptrdiff_t>(first));
  std::copy(other.v.begin() + static_cast<std::ptrdiff_t>(first), other.v.begin() + static_cast<std::ptrdiff_t>(last),
            problem.v.begin() + static_cast<std::ptrdiff_t>(first));
  const PrefillResult after = run_reference_prefill(problem.inputs(), options);
  const auto rows = [](const PrefillResult& r, std::size_t from, std::size_t to) {
    return std::vector<double>(r.output.begin() + static_cast<std::ptrdiff_t>(from),
                               r.output.begin() + static_cast<std::ptrdiff_t>(to));
  };
  CHECK(rows(before, 0, first) == rows(after, 0, first));
  CHECK(rows(before, first, last) != rows(after, first, last));
  CHECK(rows(before, last, before.output.size()) == rows(after, last, after.output.size()));
  const auto state = [](const PrefillResult& r, std::int64_t i) {
    const std::size_t base = state_index(i, 0, 2, 0, 0);
    return std::vector<double>(r.final_state.begin() + static_cast<std::ptrdiff_t>(base),
                               r.final_state.begin() + static_cast<std::ptrdiff_t>(base + 2 * k_state_elements));
  };
  CHECK(state(before, 0) == state(after, 0));
  CHECK(state(before, 1) != state(after, 1));
  CHECK(state(before, 2) == state(after, 2));
}

TEST_CASE("a call of many pairs, run on several threads, equals one call per sequence bit for bit",
          "[reference][layout]") {
  // 6 x 4 = 24 pairs run on up to six threads (prefill_driver); a call of one
  // sequence (4 pairs) runs on one.
  const std::vector<std::int64_t> lengths = {9, 0, 17, 5, 33, 12};
  constexpr std::int64_t heads = 4;
  RandomProblem problem(ProblemSpec{1, 0, heads, lengths, GateDistribution::standard, 0}, 661);
  PrefillOptions options;
  options.output_final_state = true;
  const PrefillResult whole = run_reference_prefill(problem.inputs(), options);
  std::int64_t begin = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const std::int64_t length = lengths[i];
    RandomProblem one(ProblemSpec{1, 0, heads, {length}, GateDistribution::standard, 0}, 662 + i);
    const auto row0 = static_cast<std::ptrdiff_t>(begin * heads * k_head_dim);
    const auto rows = static_cast<std::ptrdiff_t>(length * heads * k_head_dim);
    for (auto [from, to] : {std::pair{&problem.q, &one.q}, std::pair{&problem.k, &one.k},
                            std::pair{&problem.v, &one.v}, std::pair{&problem.g, &one.g}}) {
      std::copy(from->begin() + row0, from->begin() + row0 + rows, to->begin());
    }
    std::copy_n(problem.beta.begin() + begin * heads, length * heads, one.beta.begin());
    one.a_log = problem.a_log;
    one.dt_bias = problem.dt_bias;
    const PrefillResult alone = run_reference_prefill(one.inputs(), options);
    CAPTURE(i, length);
    CHECK(std::equal(alone.output.begin(), alone.output.end(), whole.output.begin() + row0));
    const auto state0 = static_cast<std::ptrdiff_t>(state_index(static_cast<std::int64_t>(i), 0, heads, 0, 0));
    CHECK(std::equal(alone.final_state.begin(), alone.final_state.end(), whole.final_state.begin() + state0));
    CHECK_FALSE(has_nan(alone.final_state));
    begin += length;
  }
}
