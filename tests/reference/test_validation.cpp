// Bad inputs are refused with a TensorError naming the argument, before any
// state is touched.
#include "compiler/errors.hpp"
#include "reference/chunked_prefill.hpp"
#include "reference/token_reference.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

#include <cctype>
#include <functional>
#include <limits>

using namespace kda::reference;
using namespace kda::reference::testing;

namespace {

struct BadCase {
  const char* name;
  std::function<void(PrefillInputs&, PrefillOptions&)> spoil;
  const char* argument;
};

} // namespace

TEST_CASE("bad shapes, offsets and options give TensorError naming the argument", "[reference][errors]") {
  RandomProblem problem(ProblemSpec{1, 0, 2, {3, 0, 6}, GateDistribution::standard, 0}, 701);
  std::mt19937_64 rng(702);
  OwnedState state = random_state(StateDtype::bf16, 4, 2, rng);
  const OwnedState initial = state;
  const std::vector<std::int64_t> not_from_zero{1, 3, 3, 9};
  const std::vector<std::int64_t> decreasing{0, 3, 2, 9};
  const std::vector<std::int64_t> short_end{0, 3, 3, 8};
  const std::vector<std::int32_t> long_end32{0, 3, 3, 10};
  const std::vector<std::int64_t> single{0};
  const std::vector<std::int32_t> out_of_pool{0, 4, 1};
  const std::vector<std::int32_t> repeated{0, 2, 2};
  const std::vector<std::int32_t> two_indices{0, 1};
  const std::vector<std::int32_t> good_indices{3, 0, 2};
  const double nan = std::numeric_limits<double>::quiet_NaN();

  const std::vector<BadCase> cases{
      {"offsets not from 0", [&](PrefillInputs& in, PrefillOptions&) { in.cu_seqlens = std::span(not_from_zero); },
       "cu_seqlens"},
      {"decreasing offsets", [&](PrefillInputs& in, PrefillOptions&) { in.cu_seqlens = std::span(decreasing); },
       "cu_seqlens"},
      {"offsets end early", [&](PrefillInputs& in, PrefillOptions&) { in.cu_seqlens = std::span(short_end); },
       "cu_seqlens"},
      {"int32 offsets end late", [&](PrefillInputs& in, PrefillOptions&) { in.cu_seqlens = std::span(long_end32); },
       "cu_seqlens"},
      {"one offset", [&](PrefillInputs& in, PrefillOptions&) { in.cu_seqlens = std::span(single); }, "cu_seqlens"},
      {"packed with batch 2", [](PrefillInputs& in, PrefillOptions&) { in.batch = 2; }, "cu_seqlens"},
      {"q too short", [](PrefillInputs& in, PrefillOptions&) { in.q = in.q.first(in.q.size() - 1); }, "q"},
      {"k too short", [](PrefillInputs& in, PrefillOptions&) { in.k = in.k.first(in.k.size() - 128); }, "k"},
      {"v too short", [](PrefillInputs& in, PrefillOptions&) { in.v = in.v.first(5); }, "v"},
      {"g too short", [](PrefillInputs& in, PrefillOptions&) { in.g = {}; }, "g"},
      {"no heads", [](PrefillInputs& in, PrefillOptions&) { in.heads = 0; }, "q"},
      {"beta too short", [](PrefillInputs& in, PrefillOptions&) { in.beta = in.beta.first(17); }, "beta"},
      {"beta stride below H", [](PrefillInputs& in, PrefillOptions&) { in.beta_row_stride = 1; }, "beta"},
      {"A_log size", [](PrefillInputs& in, PrefillOptions&) { in.a_log = in.a_log.first(1); }, "A_log"},
      {"dt_bias size", [](PrefillInputs& in, PrefillOptions&) { in.dt_bias = in.dt_bias.first(128); }, "dt_bias"},
      {"scale not finite", [&](PrefillInputs&, PrefillOptions& o) { o.scale = nan; }, "scale"},
      {"lower_bound positive", [](PrefillInputs&, PrefillOptions& o) { o.lower_bound = 1.0; }, "lower_bound"},
      {"lower_bound zero", [](PrefillInputs&, PrefillOptions& o) { o.lower_bound = 0.0; }, "lower_bound"},
      {"lower_bound NaN", [&](PrefillInputs&, PrefillOptions& o) { o.lower_bound = nan; }, "lower_bound"},
      {"state slots", [&](PrefillInputs& in, PrefillOptions&) { in.initial_state = state.view(4); },
       "initial_state"},
      {"state size", [&](PrefillInputs& in, PrefillOptions&) {
         in.initial_state = StateBuffer(std::span(state.bf16).first(state.bf16.size() - 1), 4);
         in.ssm_state_indices = good_indices;
       }, "initial_state"},
      {"index outside the pool", [&](PrefillInputs& in, PrefillOptions&) {
         in.initial_state = state.view(4);
         in.ssm_state_indices = out_of_pool;
       }, "ssm_state_indices"},
      {"repeated index", [&](PrefillInputs& in, PrefillOptions&) {
         in.initial_state = state.view(4);
         in.ssm_state_indices = repeated;
       }, "ssm_state_indices"},
      {"index count", [&](PrefillInputs& in, PrefillOptions&) {
         in.initial_state = state.view(4);
         in.ssm_state_indices = two_indices;
       }, "ssm_state_indices"},
      {"indices without a pool", [&](PrefillInputs& in, PrefillOptions&) { in.ssm_state_indices = good_indices; },
       "ssm_state_indices"},
  };

  for (const BadCase& bad : cases) {
    for (const bool chunked : {false, true}) {
      CAPTURE(bad.name, chunked);
      PrefillInputs inputs = problem.inputs();
      PrefillOptions options;
      bad.spoil(inputs, options);
      std::string argument = "(no error)";
      std::string message;
      try {
        if (chunked) {
          run_chunked_prefill(inputs, options, ChunkConfig::unanchored_16());
        } else {
          run_reference_prefill(inputs, options);
        }
      } catch (const kda::TensorError& error) {
        argument = error.argument();
        message = error.what();
      }
      CHECK(argument == bad.argument);
      CAPTURE(message);
      REQUIRE_FALSE(message.empty());
      CHECK(message.back() != '.');
      CHECK(same_bits(state, initial)); // nothing written before the checks
    }
  }

  // The untouched problem passes, with the pool and good indices.
  PrefillInputs inputs = problem.inputs();
  inputs.initial_state = state.view(4);
  inputs.ssm_state_indices = good_indices;
  CHECK_NOTHROW(run_reference_prefill(inputs, {}));
}

TEST_CASE("the anchored chunked algorithm needs a lower bound", "[reference][errors][chunked]") {
  RandomProblem problem(ProblemSpec{1, 20, 1, {}, GateDistribution::standard, 0}, 711);
  PrefillOptions options;
  options.lower_bound = std::nullopt;
  try {
    run_chunked_prefill(problem.inputs(), options, ChunkConfig::anchored_32());
    FAIL("expected a TensorError");
  } catch (const kda::TensorError& error) {
    CHECK(error.argument() == "lower_bound");
    CHECK(std::islower(static_cast<unsigned char>(std::string(error.what()).at(0))));
  }
  CHECK_NOTHROW(run_chunked_prefill(problem.inputs(), options, chunk_config(32, false)));
}
