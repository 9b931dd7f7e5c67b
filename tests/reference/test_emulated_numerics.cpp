// The CPU emulation of each shipped schedule's numerics (reference/rounding.hpp:
// bf16 at the points its `numerics.bf16_rounding` names, fp32 products and
// state, its chunk size, anchor and inverse) against the fp64 token reference
// with spec section 8's bound: relative RMS error <= 1e-2 per (sequence, head),
// output and final state. Designs with a generator must meet it; the planned
// ones (no generator yet) are reported, and the finding about the seed's
// chunk-32 rounding plan is pinned by its own test below.
#include "compiler/errors.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "reference/chunked_prefill.hpp"
#include "reference/emulation_config.hpp"
#include "reference/rounding.hpp"
#include "reference/sequences.hpp"
#include "reference/token_reference.hpp"
#include "reference_problem.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace kda::reference;
using namespace kda::reference::testing;

namespace {

// The emulation is configured from the same NumericsPlan the kernel's
// constants come from: the lowered plan's for a schedule with a generator;
// for a planned design, plan_numerics with the seed's 8 -> 16 -> 32 inverse.
ChunkConfig emulation_of(const kda::Schedule& s) {
  try {
    kda::find_family_recipe(s);
  } catch (const kda::ScheduleError&) {
    return emulation_config(kda::plan_numerics(s, 8), s.chunk_size);
  }
  const kda::KernelPlan plan =
      kda::lower(kda::validate(s, *kda::find_target(s.targets.front())), kda::ShapeKey{});
  return emulation_config(plan.numerics, plan.tiles.chunk_size);
}

// One schedule's emulation on fixed and packed problems (with 0- and
// 1-token sequences) and three gate distributions: the worst errors.
RmsErrors emulate_schedule(const kda::Schedule& s, const ChunkConfig& config, std::uint64_t seed,
                           double& worst_departure_from_fp64) {
  RmsErrors worst;
  worst_departure_from_fp64 = 1.0;
  for (const GateDistribution gate : {GateDistribution::standard, GateDistribution::all_plus_8,
                                      GateDistribution::all_minus_8}) {
    for (const bool packed : {false, true}) {
      ProblemSpec spec = packed ? ProblemSpec{1, 0, 2, {1, 17, 0, 70, 33}, gate, 0} : ProblemSpec{2, 100, 2, {}, gate, 0};
      const RandomProblem problem(spec, ++seed);
      const std::int64_t n = problem.sequences();
      std::mt19937_64 rng(seed ^ 0x5eedULL);
      const OwnedState initial = random_state(StateDtype::fp32, n, spec.heads, rng);
      OwnedState token_state = initial;
      OwnedState chunk_state = initial;
      OwnedState exact_state = initial;
      PrefillOptions options;
      options.lower_bound = -5.0;
      options.output_final_state = true;
      PrefillInputs inputs = problem.inputs();
      inputs.initial_state = token_state.view(n);
      const PrefillResult expected = run_reference_prefill(inputs, options);
      inputs.initial_state = chunk_state.view(n);
      const PrefillResult emulated = run_chunked_prefill(inputs, options, config);
      ChunkConfig exact = config;
      exact.rounding.reset();
      inputs.initial_state = exact_state.view(n);
      const PrefillResult fp64 = run_chunked_prefill(inputs, options, exact);
      const RmsErrors e = worst_relative_rms(emulated, expected, sequence_ranges(inputs));
      UNSCOPED_INFO(s.name << " gate " << static_cast<int>(gate) << (packed ? " packed" : " fixed") << ": output "
                           << e.output << ", state " << e.final_state);
      worst.output = std::max(worst.output, e.output);
      worst.final_state = std::max(worst.final_state, e.final_state);
      worst_departure_from_fp64 = std::min(worst_departure_from_fp64,
                                           worst_relative_rms(emulated, fp64, sequence_ranges(inputs)).output);
    }
  }
  return worst;
}

bool has_generator(const kda::Schedule& s) {
  try {
    kda::find_family_recipe(s);
    return true;
  } catch (const kda::ScheduleError&) {
    return false;
  }
}

} // namespace

TEST_CASE("every generated schedule's emulated numerics meet spec section 8 against the fp64 reference",
          "[reference][emulation]") {
  std::uint64_t seed = 7000;
  for (const kda::Schedule& s : kda::shipped_schedules()) {
    double departure = 0.0;
    const RmsErrors e = emulate_schedule(s, emulation_of(s), seed += 100, departure);
    INFO(s.name << ": worst output " << e.output << ", state " << e.final_state);
    // The rounding is really applied: the emulation departs from the fp64
    // chunked result by about bf16's resolution, not by fp64 round-off.
    CHECK(departure > 1e-4);
    if (has_generator(s)) {
      CHECK(e.output <= 1e-2);
      CHECK(e.final_state <= 1e-2);
    } else if (e.output > 1e-2 || e.final_state > 1e-2) {
      WARN(s.name << " (a plan without a generator) misses spec section 8 as emulated: output " << e.output
                  << ", state " << e.final_state);
    }
  }
}

// Seed note 000's chunk-32 plan rounds the anchored operands of L and Mqk
// (Kd_a, Qd_a, Ki) to bf16. Emulated, that misses spec section 8 on the
// output of a one-token sequence with fast decay (g = +8): q.k of one token is
// a near-cancelling sum that bf16 operands cannot resolve (the portable kernel
// hit the same at 6e-2 and forms L and Mqk from split hi + lo operands). The
// shipped sm100_m128_c32 therefore keeps Qd_a and Ki as split hi + lo pairs
// (near-fp32 Mqk; L from bf16 Kd_a and split Ki) and passes; adding the two
// points back gives the seed's plan, which fails.
TEST_CASE("the seed's chunk-32 rounding plan needs near-fp32 Mqk products", "[reference][emulation]") {
  const kda::Schedule& s = *kda::find_shipped_schedule("sm100_m128_c32");
  double departure = 0.0;
  ChunkConfig seed_plan = emulation_of(s);
  CHECK(seed_plan.rounding->has("kd_anchored"));
  CHECK_FALSE(seed_plan.rounding->has("qd_anchored"));
  CHECK_FALSE(seed_plan.rounding->has("ki"));
  seed_plan.rounding->bf16.insert("qd_anchored");
  seed_plan.rounding->bf16.insert("ki");
  const RmsErrors as_seeded = emulate_schedule(s, seed_plan, 9100, departure);
  CHECK(as_seeded.output > 1e-2);
  ChunkConfig split = emulation_of(s);
  const RmsErrors with_split = emulate_schedule(s, split, 9100, departure);
  CHECK(with_split.output <= 1e-2);
  CHECK(with_split.final_state <= 1e-2);
}

// sm90_wgmma_c32 rounds Qd_a and Ki to bf16 (the seed's plan, one pass of
// bf16 MMAs for L and Mqk) and forms Mqk's diagonal from the raw rows instead:
// q^ . k^ needs no anchor factor, and it is the whole output of a one-token
// sequence. The same plan with the diagonal from the operands misses spec
// section 8 there.
TEST_CASE("bf16 anchored operands meet spec section 8 when Mqk's diagonal comes from the raw rows",
          "[reference][emulation]") {
  const kda::Schedule& s = *kda::find_shipped_schedule("sm90_wgmma_c32");
  double departure = 0.0;
  const ChunkConfig shipped = emulation_of(s);
  CHECK(shipped.rounding->has("qd_anchored"));
  CHECK(shipped.rounding->has("ki"));
  REQUIRE(shipped.mqk_diagonal_from_raw_rows);
  const RmsErrors with_raw_diagonal = emulate_schedule(s, shipped, 9100, departure);
  CHECK(with_raw_diagonal.output <= 1e-2);
  CHECK(with_raw_diagonal.final_state <= 1e-2);
  ChunkConfig from_operands = shipped;
  from_operands.mqk_diagonal_from_raw_rows = false;
  const RmsErrors without = emulate_schedule(s, from_operands, 9100, departure);
  CHECK(without.output > 1e-2);
}

TEST_CASE("bf16 rounding is to nearest even and unknown rounding points are refused", "[reference][emulation]") {
  CHECK(round_to_bf16(1.0) == 1.0);
  CHECK(round_to_bf16(1.0 + std::ldexp(1.0, -8)) == 1.0);                          // tie -> even (1.0)
  CHECK(round_to_bf16(1.0 + 3 * std::ldexp(1.0, -8)) == 1.0 + std::ldexp(1.0, -6)); // tie -> even (up)
  CHECK(round_to_bf16(1.0 + std::ldexp(1.0, -7) + std::ldexp(1.0, -12)) == 1.0 + std::ldexp(1.0, -7));
  CHECK_THROWS_WITH(RoundingPoints::from_names({"kd", "carrier"}), Catch::Contains("'carrier'"));
  CHECK(RoundingPoints::from_names({"kd", "u"}).has("u"));
}

TEST_CASE("the emulation and the kernel take their numerics constants from one plan", "[reference][emulation]") {
  const kda::KernelPlan c32 =
      kda::lower(kda::validate(*kda::find_shipped_schedule("sm90_wgmma_c32"), *kda::find_target("sm_90a")),
                 kda::ShapeKey{});
  CHECK(c32.numerics.anchor_rows == 16);
  CHECK(c32.numerics.inverse_block == 16);
  const ChunkConfig config = emulation_config(c32.numerics, c32.tiles.chunk_size);
  CHECK(config.anchored);
  CHECK(config.inverse_scheme() == InverseScheme::blocked);
  CHECK(config.inverse_block == 16);
  const std::string text = kda::emit_cuda(c32).text;
  CHECK(text.find("constexpr int ANCHOR_ROWS = 16;") != std::string::npos);
  CHECK(text.find("constexpr int INVERSE_BLOCK = 16;") != std::string::npos);
  const kda::KernelPlan c16 =
      kda::lower(kda::validate(*kda::find_shipped_schedule("sm90_wgmma_c16"), *kda::find_target("sm_90a")),
                 kda::ShapeKey{});
  CHECK(c16.numerics.anchor_rows == 0);
  CHECK(emulation_config(c16.numerics, 16).inverse_scheme() == InverseScheme::forward_substitution);
  kda::NumericsPlan odd = c32.numerics;
  odd.anchor_rows = 8;
  CHECK_THROWS_AS(emulation_config(odd, 32), kda::InternalError);
}
