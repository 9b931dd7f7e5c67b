// [gpu] The LLVM tier's token-recurrent kernel (the `token_llvm` plan,
// compiler/ir/token_kernel): IR -> PTX by LLVM -> cubin by nvJitLink ->
// launched through the driver with the plan's argument struct, against the
// fp64 token reference: with fp32 outputs (a plan the test owns) and an fp32
// state it is the GPU oracle (relative RMS <= 1e-5 per sequence and head, up
// to 8,192 tokens); with bf16 outputs and state it meets spec section 8
// (1e-2). Outputs are poisoned first, so an unwritten element fails. The
// routed path (kda::prefill with family token) runs in the contract and
// prefill matrices (test_gpu_contract.cpp, test_gpu_prefill.cpp).
#include "compiler/bf16.hpp"
#include "kdajit/kda.hpp"
#include "compiler/schedule_fixtures.hpp"
#include "device_array.hpp"
#include "device_inputs.hpp"
#include "device_values.hpp"
#include "reference/sequences.hpp"
#include "reference/token_reference.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/loaded_module.hpp"
#include "runtime/arg_pack.hpp"
#include "runtime/tier0_build.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace kda;
namespace rt = reference::testing;

namespace {

struct TokenConfig {
  std::string schedule = "token_llvm"; ///< or token_llvm_smem (the state in SMEM)
  LayoutKind layout = LayoutKind::fixed;
  StatePrecision state = StatePrecision::bf16;
  bool fp32_output = false;
};

struct TokenCase {
  std::string label;
  rt::ProblemSpec spec;
  TokenConfig config;
  bool with_state = true;
  bool int32_offsets = false;
  double tolerance = 1e-2;
};

struct Worst {
  double output = 0.0;
  double state = 0.0;
};

KernelPlan token_plan(const TokenConfig& config) {
  KernelPlan plan = test::lower_shipped(config.schedule, "sm_90a", config.layout, config.state);
  plan.token->fp32_output = config.fp32_output;
  return plan;
}

runtime::LoadedModule load_token_kernel(const KernelPlan& plan) {
  const runtime::Tier0Build b = runtime::build_tier0(plan);
  return runtime::LoadedModule::load(b.cubin, {plan.token->entry_name}, static_cast<int>(plan.token->dynamic_smem));
}

// The device pointers of one token-kernel launch (null where absent).
struct TokenPointers {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* g = nullptr;
  const void* beta = nullptr;
  const void* a_log = nullptr;
  const void* dt_bias = nullptr;
  const void* out = nullptr;
  const void* state = nullptr;      ///< read and updated in place, or none
  const void* cu_seqlens = nullptr; ///< packed layouts
};

// Every value of the plan's argument struct for a launch over `n_seq`
// sequences of `spec` (lower_bound -5, the default scale); the prepare
// overlap's, the split's and the serving-engine arguments off. Packing them
// throws where the ABI has a field this list misses (CPU test below).
ArgValues token_kernel_values(const KernelPlan& plan, const TokenPointers& ptr, const rt::ProblemSpec& spec,
                              std::int64_t n_seq, bool int32_offsets) {
  const std::int64_t heads = spec.heads;
  const bool packed = plan.token->layout == LayoutKind::packed;
  ArgValues values(plan.abi);
  values.set("q", ptr.q).set("k", ptr.k).set("v", ptr.v).set("g", ptr.g);
  values.set("beta", ptr.beta).set("a_log", ptr.a_log).set("dt_bias", ptr.dt_bias);
  values.set("out", ptr.out).set("state_in", ptr.state).set("state_out", ptr.state);
  values.set("cu_seqlens", packed ? ptr.cu_seqlens : nullptr);
  values.set("chunk_offsets", static_cast<const void*>(nullptr)).set("workspace", static_cast<const void*>(nullptr));
  values.set("beta_token_stride", std::int64_t{spec.beta_row_stride > 0 ? spec.beta_row_stride : heads});
  values.set("seq_len", std::int64_t{packed ? 0 : spec.tokens}).set("total_tokens", std::int64_t{0});
  values.set("num_seqs", static_cast<std::int32_t>(n_seq)).set("heads", static_cast<std::int32_t>(heads));
  values.set("offsets_i64", std::int32_t{int32_offsets ? 0 : 1});
  values.set("scale", 1.0F / std::sqrt(128.0F)).set("gate_scale", static_cast<float>(-5.0 * 1.4426950408889634));
  values.set("ready_flags", static_cast<const void*>(nullptr)).set("ready_epoch", std::int32_t{0});
  values.set("chunk_begin", std::int32_t{0}).set("chunk_major", std::int32_t{0});
  values.set("state_indices", static_cast<const void*>(nullptr)).set("state_slot_stride", heads * 128 * 128);
  values.set("seq_order", static_cast<const void*>(nullptr)).set("checkpoints", static_cast<const void*>(nullptr));
  values.set("checkpoint_starts", static_cast<const void*>(nullptr)).set("checkpoint_chunks", std::int32_t{0});
  values.set("prepare_streams", std::int32_t{0});
  return values;
}

// Launches the plan's token kernel on the device inputs (state updated in
// place, or none), lower_bound -5, the default scale.
void run_token_kernel(const KernelPlan& plan, const test::DeviceInputs& device, void* out, void* state,
                      bool int32_offsets) {
  const runtime::LoadedModule module = load_token_kernel(plan);
  TokenPointers ptr;
  ptr.q = device.q.data();
  ptr.k = device.k.data();
  ptr.v = device.v.data();
  ptr.g = device.g.data();
  ptr.beta = device.beta.data();
  ptr.a_log = device.a_log.data();
  ptr.dt_bias = device.dt_bias.data();
  ptr.out = out;
  ptr.state = state;
  ptr.cu_seqlens = int32_offsets ? device.cu32.data() : device.cu64.data();
  const ArgValues values = token_kernel_values(plan, ptr, device.spec, device.sequences, int32_offsets);
  void* args[] = {const_cast<std::uint8_t*>(values.packed().data())};
  runtime::launch(module.function(plan.token->entry_name).function,
                  {static_cast<unsigned>(device.sequences), static_cast<unsigned>(device.spec.heads), 1}, {128, 1, 1},
                  static_cast<unsigned>(plan.token->dynamic_smem), nullptr, args);
  runtime::check_cu(runtime::driver_api().cuCtxSynchronize(), "cuCtxSynchronize", "the token kernel");
}

Worst run_token_case(const TokenCase& c, std::uint64_t seed) {
  INFO("case " << c.label);
  runtime::ensure_current_context();
  rt::RandomProblem problem(c.spec, seed);
  reference::PrefillInputs inputs = c.int32_offsets ? problem.inputs_int32() : problem.inputs();
  const std::int64_t n_seq = problem.sequences();
  const std::int64_t heads = c.spec.heads;
  const bool fp32_state = c.config.state == StatePrecision::fp32;
  std::mt19937_64 rng(seed * 7919 + 17);
  reference::OwnedState initial =
      rt::random_state(fp32_state ? reference::StateDtype::fp32 : reference::StateDtype::bf16, n_seq, heads, rng);
  reference::OwnedState reference_state = initial;
  reference::PrefillOptions options;
  options.lower_bound = -5.0;
  if (c.with_state) {
    inputs.initial_state = reference_state.view(n_seq);
  }
  const reference::PrefillResult ref = reference::run_reference_prefill(inputs, options);
  const std::vector<reference::SequenceRange> ranges = reference::sequence_ranges(inputs);

  const test::DeviceInputs device(problem);
  const std::size_t state_elems = static_cast<std::size_t>(n_seq * heads * 128 * 128);
  const std::size_t state_bytes = state_elems * (fp32_state ? 4 : 2);
  test::DeviceArray state(state_bytes);
  state.upload(fp32_state ? static_cast<const void*>(initial.fp32.data()) : initial.bf16.data(), state_bytes);
  const std::size_t out_elems = static_cast<std::size_t>(problem.total_tokens() * heads * 128);
  const bool fp32_out = c.config.fp32_output;
  test::DeviceArray out(out_elems * (fp32_out ? 4 : 2));
  out.poison();

  run_token_kernel(token_plan(c.config), device, out.data(), c.with_state ? state.data() : nullptr, c.int32_offsets);

  std::vector<std::uint8_t> out_bytes(out.bytes());
  out.download(out_bytes.data(), out_bytes.size());
  std::vector<std::uint8_t> state_out(state_bytes);
  state.download(state_out.data(), state_bytes);
  Worst worst;
  std::int64_t non_finite = 0;
  for (std::int64_t n = 0; n < n_seq; ++n) {
    for (std::int64_t h = 0; h < heads; ++h) {
      test::RelativeRms output;
      for (std::int64_t t = ranges[n].token_begin; t < ranges[n].token_begin + ranges[n].length; ++t) {
        for (int i = 0; i < 128; ++i) {
          const std::size_t at = static_cast<std::size_t>((t * heads + h) * 128 + i);
          output.add(test::element(out_bytes, at, fp32_out), ref.output[at]);
        }
      }
      worst.output = std::max(worst.output, output.rel());
      non_finite += output.non_finite;
      if (c.with_state) {
        test::RelativeRms final_state;
        for (std::size_t i = 0; i < 128 * 128; ++i) {
          const std::size_t at = static_cast<std::size_t>((n * heads + h) * 128 * 128) + i;
          final_state.add(test::element(state_out, at, fp32_state), ref.final_state[at]);
        }
        worst.state = std::max(worst.state, final_state.rel());
        non_finite += final_state.non_finite;
      }
    }
  }
  if (!c.with_state) { // no state given: the state memory is never written
    const void* initial_bytes = fp32_state ? static_cast<const void*>(initial.fp32.data()) : initial.bf16.data();
    CHECK(std::memcmp(state_out.data(), initial_bytes, state_bytes) == 0);
  }
  CHECK(non_finite == 0); // poisoned outputs: an unwritten element is a NaN
  CHECK(worst.output <= c.tolerance);
  CHECK(worst.state <= c.tolerance);
  return worst;
}

rt::ProblemSpec fixed(std::int64_t batch, std::int64_t tokens, std::int64_t heads,
                      rt::GateDistribution gate = rt::GateDistribution::standard) {
  rt::ProblemSpec s;
  s.batch = batch;
  s.tokens = tokens;
  s.heads = heads;
  s.gate = gate;
  return s;
}

rt::ProblemSpec packed(std::vector<std::int64_t> lengths, std::int64_t heads) {
  rt::ProblemSpec s;
  s.seqlens = std::move(lengths);
  s.heads = heads;
  return s;
}

} // namespace

// CPU: a field added to the argument ABI without a value here would fail the
// GPU cases below only on a GPU machine; packing the values catches it here.
TEST_CASE("the token kernel test's argument values cover every field of the plan's ABI", "[ir][tier0]") {
  for (const char* schedule : {"token_llvm", "token_llvm_smem"}) {
    for (const LayoutKind layout : {LayoutKind::fixed, LayoutKind::packed}) {
      INFO(schedule << (layout == LayoutKind::packed ? ", packed" : ", fixed"));
      const KernelPlan plan = token_plan({.schedule = schedule, .layout = layout, .state = StatePrecision::bf16});
      const ArgValues values = token_kernel_values(plan, {}, fixed(2, 300, 3), 2, false);
      REQUIRE_NOTHROW(values.packed());
      CHECK(static_cast<std::int64_t>(values.packed().size()) == plan.abi.size);
    }
  }
}

TEST_CASE("gpu: the LLVM token kernel in fp32 is an oracle within 1e-5 of the fp64 reference, state in registers "
          "or SMEM",
          "[gpu][ir][tier0]") {
  const TokenConfig fixed32{.layout = LayoutKind::fixed, .state = StatePrecision::fp32, .fp32_output = true};
  const TokenConfig packed32{.layout = LayoutKind::packed, .state = StatePrecision::fp32, .fp32_output = true};
  const std::vector<TokenCase> cases = {
      {"fixed 1x8192 H1", fixed(1, 8192, 1), fixed32, true, false, 1e-5},
      {"fixed 2x300 H3", fixed(2, 300, 3), fixed32, true, false, 1e-5},
      {"packed 0/1/77/300/1024 H2 int64", packed({0, 1, 77, 300, 1024}, 2), packed32, true, false, 1e-5},
      {"packed 5/130/64 H2 int32", packed({5, 130, 64}, 2), packed32, true, true, 1e-5},
      {"fixed 2x256 H2 g -8", fixed(2, 256, 2, rt::GateDistribution::all_minus_8), fixed32, true, false, 1e-5},
      {"fixed 2x256 H2 g +8", fixed(2, 256, 2, rt::GateDistribution::all_plus_8), fixed32, true, false, 1e-5},
      {"fixed 1x200 H2 dt_bias U[-8,8]", fixed(1, 200, 2, rt::GateDistribution::bias_uniform_8), fixed32, true, false,
       1e-5},
  };
  for (const char* schedule : {"token_llvm", "token_llvm_smem"}) {
    std::uint64_t seed = 101;
    for (TokenCase c : cases) {
      c.config.schedule = schedule;
      const Worst w = run_token_case(c, seed++);
      WARN(schedule << ", " << c.label << ": output " << w.output << ", state " << w.state);
    }
  }
}

TEST_CASE("gpu: the LLVM token kernel with bf16 outputs meets spec section 8, bf16 or fp32 state or none",
          "[gpu][ir][tier0]") {
  const std::vector<TokenCase> cases = {
      {"fixed 2x300 H3 bf16 state", fixed(2, 300, 3), {.layout = LayoutKind::fixed, .state = StatePrecision::bf16}},
      {"packed 0/5/200/33 H4 bf16 state", packed({0, 5, 200, 33}, 4),
       {.layout = LayoutKind::packed, .state = StatePrecision::bf16}},
      {"packed 7/64 H2 fp32 state int32", packed({7, 64}, 2), {.layout = LayoutKind::packed, .state = StatePrecision::fp32},
       true, true},
      {"fixed 1x100 H2 no state", fixed(1, 100, 2), {.layout = LayoutKind::fixed, .state = StatePrecision::bf16}, false},
  };
  std::uint64_t seed = 201;
  for (const TokenCase& c : cases) {
    const Worst w = run_token_case(c, seed++);
    WARN(c.label << ": output " << w.output << ", state " << w.state);
  }
}

// Sequences too long for the CPU reference: the routed kernel (kda::prefill,
// bf16 state in place) against the token kernel in fp32 (fp32 state from the
// same bf16 values, fp32 outputs: within 1e-5 of the fp64 reference above),
// per sequence and head within spec section 8's 1e-2.
TEST_CASE("gpu: sequences of 131,072 tokens and more against the token kernel's fp32 oracle", "[gpu][tier0][long]") {
  runtime::ensure_current_context();
  for (const rt::ProblemSpec& spec : {fixed(1, 131072, 2), packed({131072, 150000, 7}, 1)}) {
    const bool is_packed = !spec.seqlens.empty();
    INFO((is_packed ? "packed" : "fixed") << " H" << spec.heads);
    rt::RandomProblem problem(spec, 301);
    const test::DeviceInputs device(problem);
    const std::int64_t n_seq = problem.sequences();
    const std::int64_t heads = spec.heads;
    std::mt19937_64 rng(302);
    const reference::OwnedState initial = rt::random_state(reference::StateDtype::bf16, n_seq, heads, rng);
    const std::size_t state_elems = static_cast<std::size_t>(n_seq * heads * 128 * 128);
    std::vector<float> widened(state_elems);
    for (std::size_t i = 0; i < state_elems; ++i) {
      widened[i] = bf16_to_float(Bf16{initial.bf16[i]});
    }
    const std::size_t out_elems = static_cast<std::size_t>(problem.total_tokens() * heads * 128);
    test::DeviceArray oracle_out(out_elems * 4);
    test::DeviceArray oracle_state(state_elems * 4);
    oracle_out.poison();
    oracle_state.upload(widened.data(), state_elems * 4);
    KernelPlan plan = token_plan({.layout = is_packed ? LayoutKind::packed : LayoutKind::fixed,
                                  .state = StatePrecision::fp32, .fp32_output = true});
    run_token_kernel(plan, device, oracle_out.data(), oracle_state.data(), false);

    test::DeviceArray out(out_elems * 2);
    test::DeviceArray state(state_elems * 2);
    out.poison();
    state.upload(initial.bf16.data(), state_elems * 2);
    PrefillArgs args = device.args();
    const std::vector<std::int64_t> shape = {is_packed ? 1 : n_seq, is_packed ? problem.total_tokens() : spec.tokens,
                                             heads, 128};
    args.out = TensorRef::contiguous(out.data(), ElementType::bf16, shape);
    args.initial_state = TensorRef::contiguous(state.data(), ElementType::bf16, {n_seq, heads, 128, 128});
    const PrefillResult routed = recurrent_kda_prefill(args);
    runtime::check_cu(runtime::driver_api().cuCtxSynchronize(), "cuCtxSynchronize", "the routed kernel");

    std::vector<std::uint8_t> a(out_elems * 4), b(out_elems * 2), sa(state_elems * 4), sb(state_elems * 2);
    oracle_out.download(a.data(), a.size());
    out.download(b.data(), b.size());
    oracle_state.download(sa.data(), sa.size());
    state.download(sb.data(), sb.size());
    std::int64_t begin = 0;
    double worst_out = 0.0;
    double worst_state = 0.0;
    std::int64_t non_finite = 0;
    for (std::int64_t n = 0; n < n_seq; ++n) {
      const std::int64_t length = is_packed ? spec.seqlens[static_cast<std::size_t>(n)] : spec.tokens;
      for (std::int64_t h = 0; h < heads; ++h) {
        test::RelativeRms o;
        for (std::int64_t t = begin; t < begin + length; ++t) {
          for (int i = 0; i < 128; ++i) {
            const std::size_t at = static_cast<std::size_t>((t * heads + h) * 128 + i);
            o.add(test::element(b, at, false), test::element(a, at, true));
          }
        }
        test::RelativeRms st;
        for (std::size_t i = 0; i < 128 * 128; ++i) {
          const std::size_t at = static_cast<std::size_t>((n * heads + h) * 128 * 128) + i;
          st.add(test::element(sb, at, false), test::element(sa, at, true));
        }
        worst_out = std::max(worst_out, o.rel());
        worst_state = std::max(worst_state, st.rel());
        non_finite += o.non_finite + st.non_finite;
      }
      begin += length;
    }
    WARN((is_packed ? "packed 131072/150000/7 H1" : "fixed 1x131072 H2") << ": " << routed.schedule << " on "
                                                                        << routed.target << " vs the fp32 oracle: out "
                                                                        << worst_out << ", state " << worst_state);
    CHECK(routed.schedule != "token_llvm");
    CHECK(non_finite == 0);
    CHECK(worst_out <= 1e-2);
    CHECK(worst_state <= 1e-2);
  }
}
