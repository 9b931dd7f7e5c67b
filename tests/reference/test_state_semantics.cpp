// State I/O semantics (spec 1.4, 1.5): in place, allocated final state, pools.
#include "reference/token_reference.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

using namespace kda::reference;
using namespace kda::reference::testing;

namespace {

// Whether `stored` holds exactly the rounding of the fp64 states of `result`
// (sequence i stored in slot slots[i]).
bool holds_rounded(const OwnedState& stored, const PrefillResult& result, const std::vector<std::int64_t>& slots) {
  OwnedState copy = stored;
  const StateBuffer view = copy.view(0);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    for (std::int64_t h = 0; h < result.heads; ++h) {
      for (std::int64_t e = 0; e < k_state_elements; ++e) {
        const double expected = result.final_state[state_index(static_cast<std::int64_t>(i), h, result.heads, 0, 0) +
                                                   static_cast<std::size_t>(e)];
        const std::size_t at = state_index(slots[i], h, result.heads, 0, 0) + static_cast<std::size_t>(e);
        const double before = view.load(at);
        view.store(at, expected);
        if (view.load(at) != before) {
          return false;
        }
      }
    }
  }
  return true;
}

} // namespace

TEST_CASE("an initial state is updated in place even without output_final_state", "[reference][state]") {
  for (const StateDtype dtype : {StateDtype::bf16, StateDtype::fp32}) {
    for (const bool output_final_state : {false, true}) {
      CAPTURE(dtype == StateDtype::bf16, output_final_state);
      RandomProblem problem(ProblemSpec{2, 19, 2, {}, GateDistribution::standard, 0}, 401);
      std::mt19937_64 rng(402);
      OwnedState state = random_state(dtype, 2, 2, rng);
      const OwnedState initial = state;
      PrefillInputs inputs = problem.inputs();
      inputs.initial_state = state.view(2);
      PrefillOptions options;
      options.output_final_state = output_final_state;
      const PrefillResult result = run_reference_prefill(inputs, options);
      CHECK_FALSE(result.allocated_final_state.has_value()); // the state itself is the returned final state
      CHECK_FALSE(has_nan(result.output));
      CHECK_FALSE(has_nan(result.final_state));
      CHECK_FALSE(same_bits(state, initial));
      CHECK(holds_rounded(state, result, {0, 1})); // rounded once, from the fp64 working state
    }
  }
}

TEST_CASE("the working state is fp64 whatever the state dtype", "[reference][state]") {
  RandomProblem problem(ProblemSpec{1, 40, 1, {}, GateDistribution::all_minus_8, 0}, 411);
  std::mt19937_64 rng(412);
  OwnedState bf16_state = random_state(StateDtype::bf16, 1, 1, rng);
  OwnedState fp32_state = OwnedState::poisoned(StateDtype::fp32, 1, 1);
  for (std::size_t i = 0; i < bf16_state.bf16.size(); ++i) {
    fp32_state.fp32[i] = kda::bf16_to_float(bf16_state.bf16[i]); // the same values
  }
  PrefillInputs inputs = problem.inputs();
  inputs.initial_state = bf16_state.view(1);
  const PrefillResult from_bf16 = run_reference_prefill(inputs, {});
  inputs.initial_state = fp32_state.view(1);
  const PrefillResult from_fp32 = run_reference_prefill(inputs, {});
  CHECK(from_bf16.final_state == from_fp32.final_state);
  CHECK(from_bf16.output == from_fp32.output);
}

TEST_CASE("output_final_state without an initial state allocates the final state", "[reference][state]") {
  for (const StateDtype dtype : {StateDtype::bf16, StateDtype::fp32}) {
    CAPTURE(dtype == StateDtype::bf16);
    RandomProblem problem(ProblemSpec{1, 0, 3, {7, 0, 20}, GateDistribution::standard, 0}, 421);
    PrefillOptions options;
    options.output_final_state = true;
    options.final_state_dtype = dtype;
    const PrefillResult result = run_reference_prefill(problem.inputs(), options);
    REQUIRE(result.allocated_final_state.has_value());
    CHECK(result.allocated_final_state->dtype == dtype);
    CHECK(holds_rounded(*result.allocated_final_state, result, {0, 1, 2}));
    // The empty sequence's final state is its (zero) initial state.
    for (std::int64_t h = 0; h < 3; ++h) {
      for (std::int64_t e = 0; e < k_state_elements; ++e) {
        CHECK(result.final_state[state_index(1, h, 3, 0, 0) + static_cast<std::size_t>(e)] == 0.0);
      }
    }
  }
}

TEST_CASE("no initial state and no output_final_state write no state", "[reference][state]") {
  RandomProblem problem(ProblemSpec{2, 5, 1, {}, GateDistribution::standard, 0}, 431);
  const PrefillResult result = run_reference_prefill(problem.inputs(), {});
  CHECK_FALSE(result.allocated_final_state.has_value());
  CHECK_FALSE(has_nan(result.output));
  CHECK_FALSE(has_nan(result.final_state)); // fp64 diagnostic copy only
}

TEST_CASE("a state pool changes only the named slots", "[reference][state]") {
  for (const StateDtype dtype : {StateDtype::bf16, StateDtype::fp32}) {
    CAPTURE(dtype == StateDtype::bf16);
    RandomProblem problem(ProblemSpec{1, 0, 2, {9, 0, 33}, GateDistribution::standard, 0}, 441);
    std::mt19937_64 rng(442);
    OwnedState pool = random_state(dtype, 6, 2, rng);
    const OwnedState initial = pool;
    const std::vector<std::int32_t> indices{4, 1, 0};
    PrefillInputs inputs = problem.inputs();
    inputs.initial_state = pool.view(6);
    inputs.ssm_state_indices = indices;
    const PrefillResult result = run_reference_prefill(inputs, {});

    // The same call on a contiguous copy of the named slots gives the same results.
    OwnedState packed = OwnedState::poisoned(dtype, 3, 2);
    for (std::size_t i = 0; i < indices.size(); ++i) {
      for (std::int64_t h = 0; h < 2; ++h) {
        for (std::int64_t e = 0; e < k_state_elements; ++e) {
          const std::size_t from = state_index(indices[i], h, 2, 0, 0) + static_cast<std::size_t>(e);
          const std::size_t to = state_index(static_cast<std::int64_t>(i), h, 2, 0, 0) + static_cast<std::size_t>(e);
          if (dtype == StateDtype::bf16) {
            packed.bf16[to] = initial.bf16[from];
          } else {
            packed.fp32[to] = initial.fp32[from];
          }
        }
      }
    }
    PrefillInputs contiguous = problem.inputs();
    contiguous.initial_state = packed.view(3);
    const PrefillResult expected = run_reference_prefill(contiguous, {});
    CHECK(result.output == expected.output);
    CHECK(result.final_state == expected.final_state);
    CHECK(holds_rounded(pool, result, {4, 1, 0}));

    // Slot 1 (empty sequence) and the unnamed slots 2, 3, 5 are bit-identical.
    for (const std::int64_t slot : {1, 2, 3, 5}) {
      CAPTURE(slot);
      for (std::int64_t h = 0; h < 2; ++h) {
        const std::size_t base = state_index(slot, h, 2, 0, 0);
        bool identical = true;
        for (std::size_t e = 0; e < static_cast<std::size_t>(k_state_elements); ++e) {
          identical = identical && (dtype == StateDtype::bf16 ? pool.bf16[base + e].bits == initial.bf16[base + e].bits
                                                               : pool.fp32[base + e] == initial.fp32[base + e]);
        }
        CHECK(identical);
      }
    }
    // Slots 4 and 0 changed.
    CHECK(pool.load(state_index(4, 0, 2, 3, 3)) != initial.load(state_index(4, 0, 2, 3, 3)));
    CHECK(pool.load(state_index(0, 1, 2, 7, 9)) != initial.load(state_index(0, 1, 2, 7, 9)));
  }
}
