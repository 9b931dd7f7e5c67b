// kda::PrefillPlan on the GPU: a run gives the eager call's
// bits; a captured run replayed 50 times with new input and metadata contents
// at the same addresses gives, each time, the bits of an eager call on the
// same inputs; what a plan or a capture must refuse is refused.
#include "device_problem.hpp"
#include "reference/reference_problem.hpp"
#include "c_args.hpp"
#include "runtime/workspace_bindings.hpp"

#include "compiler/errors.hpp"
#include "runtime/cuda_driver.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <tuple>
#include <numeric>
#include <random>

using namespace kda;
using namespace kda::test;
using Catch::Contains;

namespace {

std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const TensorError& e) {
    return e.what();
  }
  return "accepted";
}

struct Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~Graph() {
    if (exec != nullptr) {
      runtime::driver_api().cuGraphExecDestroy(exec);
    }
    if (graph != nullptr) {
      runtime::driver_api().cuGraphDestroy(graph);
    }
  }
};

// N sequence lengths summing to `tokens`, random cuts (equal cuts: empty
// sequences); the last `padding` sequences empty, as engines pad a batch.
std::vector<std::int64_t> random_offsets(std::int64_t tokens, std::int64_t n, std::int64_t padding, std::mt19937_64& rng) {
  std::vector<std::int64_t> cuts(static_cast<std::size_t>(n - padding - 1));
  for (std::int64_t& c : cuts) {
    c = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(tokens + 1));
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::int64_t> offsets = {0};
  offsets.insert(offsets.end(), cuts.begin(), cuts.end());
  for (std::int64_t i = 0; i <= padding; ++i) {
    offsets.push_back(tokens);
  }
  return offsets;
}

// The inputs of `p` from `other` in even rounds, from its own problem in odd
// ones: new contents at the same addresses before each call.
void refill(DeviceProblem& p, const reference::testing::RandomProblem& other, int round) {
  const reference::testing::RandomProblem& from = round % 2 == 0 ? other : p.problem;
  p.q.upload(from.q.data(), p.q.bytes());
  p.k.upload(from.k.data(), p.k.bytes());
  p.v.upload(from.v.data(), p.v.bytes());
  p.g.upload(from.g.data(), p.g.bytes());
  p.beta.upload(from.beta.data(), p.beta.bytes());
}

// A graph of one planned run of `p` on `s`, instantiated with the nodes'
// priorities kept (the overlapped recurrence's stream priority).
void capture_run(const PrefillPlan& plan, const DeviceProblem& p, const Stream& s, DeviceArray& workspace,
                 Graph& graph) {
  KDA_CU(cuStreamBeginCapture, s.s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  plan.run(p.args(s.s), workspace.data(), plan.workspace_bytes());
  KDA_CU(cuStreamEndCapture, s.s, &graph.graph);
  KDA_CU(cuGraphInstantiateWithFlags, &graph.exec, graph.graph,
         static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY));
}

// Replays `graph` `rounds` times with new contents each round (refill) and
// counts those whose outputs and state equal reference_bits(), computed on
// the same contents before the replay.
template <class ReferenceBits>
int identical_replays(const Graph& graph, DeviceProblem& p, const reference::testing::RandomProblem& other,
                      const Stream& s, int rounds, ReferenceBits reference_bits) {
  int identical = 0;
  for (int round = 0; round < rounds; ++round) {
    refill(p, other, round);
    const std::vector<std::uint8_t> expected = reference_bits();
    p.reset();
    KDA_CU(cuGraphLaunch, graph.exec, s.s);
    KDA_CU(cuStreamSynchronize, s.s);
    identical += p.result() == expected ? 1 : 0;
  }
  return identical;
}

} // namespace

TEST_CASE("gpu plan: run gives the eager call's bits; signature, workspace and capture refusals",
          "[gpu][plan][contract]") {
  DeviceProblem p(2, 600, 8, 1001);
  const PrefillPlan plan(p.args(nullptr));
  CHECK(plan.schedule() == "sm90_wgmma_c32");
  REQUIRE(plan.workspace_bytes() > 0);
  DeviceArray workspace(static_cast<std::size_t>(plan.workspace_bytes()));
  p.reset();
  recurrent_kda_prefill(p.args(nullptr));
  const std::vector<std::uint8_t> eager = p.result();
  p.reset();
  plan.run(p.args(nullptr), workspace.data(), plan.workspace_bytes());
  CHECK(p.result() == eager);
  const void* const bound = WorkspaceBindings::instance().bound_plan(workspace.data());
  CHECK(bound != nullptr);

  DeviceProblem other(2, 600, 4, 1002);
  CHECK_THAT(refusal([&] { plan.run(other.args(nullptr), workspace.data(), plan.workspace_bytes()); }),
             Contains("argument 'args': heads 4 differs from the plan's 8"));
  PrefillArgs no_out = p.args(nullptr);
  no_out.out = TensorRef();
  CHECK_THAT(refusal([&] { plan.run(no_out, workspace.data(), plan.workspace_bytes()); }),
             Contains("argument 'out': is required by PrefillPlan::run"));
  CHECK_THAT(refusal([&] { plan.run(p.args(nullptr), workspace.data(), plan.workspace_bytes() - 16); }),
             Contains("argument 'workspace'"));
  CHECK_THAT(refusal([&] { plan.run(p.args(nullptr), p.q.data(), plan.workspace_bytes()); }),
             Contains("overlap 'q'"));
  CHECK(WorkspaceBindings::instance().bound_plan(workspace.data()) == bound);
  {
    const PrefillPlan second(p.args(nullptr));
    CHECK(WorkspaceBindings::instance().bound_plan(workspace.data()) == bound);
    CHECK_THAT(refusal([&] { second.run(p.args(nullptr), workspace.data(), plan.workspace_bytes()); }),
               Contains("is bound to another live PrefillPlan"));
  }
  // the C API: create, size, run, destroy
  {
    const kda_prefill_args c = c_args(p.args(nullptr));
    kda_plan handle = nullptr;
    REQUIRE(kda_plan_create(&c, &handle) == KDA_OK);
    std::int64_t bytes = 0;
    REQUIRE(kda_plan_workspace_bytes(handle, &bytes) == KDA_OK);
    CHECK(bytes == plan.workspace_bytes());
    DeviceArray c_workspace(static_cast<std::size_t>(bytes));
    p.reset();
    CHECK(kda_plan_run(handle, &c, c_workspace.data(), bytes) == KDA_OK);
    CHECK(p.result() == eager);
    CHECK(kda_plan_run(handle, &c, c_workspace.data(), 16) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("the plan needs"));
    kda_plan_destroy(handle);
  }
  // an eager call during capture is refused, never silently degraded
  Stream s;
  KDA_CU(cuStreamBeginCapture, s.s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  const std::string eager_in_capture = refusal([&] { recurrent_kda_prefill(p.args(s.s)); });
  Graph discarded;
  KDA_CU(cuStreamEndCapture, s.s, &discarded.graph);
  CHECK_THAT(eager_in_capture, Contains("argument 'stream': is being captured into a CUDA graph"));
}

TEST_CASE("gpu plan: a captured run replayed 50 times with new contents equals eager calls bit for bit",
          "[gpu][plan][graph][contract]") {
  constexpr std::int64_t T = 2000, N = 12, H = 4, kSlots = 16, kEvery = 64;
  constexpr std::int64_t kSlotElems = H * 128 * 128, kPitch = kSlotElems + 8;
  constexpr std::int64_t kRows = T / kEvery + N; // an upper bound of sum ceil(L / 64)
  std::mt19937_64 rng(2024);
  reference::testing::ProblemSpec spec;
  spec.heads = H;
  spec.tokens = T;
  spec.seqlens = {T}; // contents only: the segmentation is drawn below
  DeviceArray q(T * H * 128 * 2), k(T * H * 128 * 2), v(T * H * 128 * 2), g(T * H * 128 * 2), beta(T * H * 2);
  DeviceArray a_log(H * 4), dt_bias(H * 128 * 4), cu((N + 1) * 8), indices(N * 4), order(N * 4), starts((N + 1) * 8);
  DeviceArray pool(kSlots * kPitch * 2), rows(kRows * kSlotElems * 2), out(T * H * 128 * 2);
  PrefillArgs a;
  const std::vector<std::int64_t> shape{1, T, H, 128};
  a.q = TensorRef::contiguous(q.data(), ElementType::bf16, shape);
  a.k = TensorRef::contiguous(k.data(), ElementType::bf16, shape);
  a.v = TensorRef::contiguous(v.data(), ElementType::bf16, shape);
  a.g = TensorRef::contiguous(g.data(), ElementType::bf16, shape);
  a.beta = TensorRef::contiguous(beta.data(), ElementType::bf16, {1, T, H});
  a.a_log = TensorRef::contiguous(a_log.data(), ElementType::fp32, {H});
  a.dt_bias = TensorRef::contiguous(dt_bias.data(), ElementType::fp32, {H, 128});
  a.cu_seqlens = TensorRef::contiguous(cu.data(), ElementType::i64, {N + 1});
  a.initial_state = TensorRef::contiguous(pool.data(), ElementType::bf16, {kSlots, H, 128, 128});
  a.initial_state.strides = {kPitch, 128 * 128, 128, 1};
  a.ssm_state_indices = TensorRef::contiguous(indices.data(), ElementType::i32, {N});
  a.seq_order = TensorRef::contiguous(order.data(), ElementType::i32, {N});
  a.checkpoint_every_n_tokens = kEvery;
  a.state_checkpoints = TensorRef::contiguous(rows.data(), ElementType::bf16, {kRows, H, 128, 128});
  a.checkpoint_cu_starts = TensorRef::contiguous(starts.data(), ElementType::i64, {N + 1});
  a.out = TensorRef::contiguous(out.data(), ElementType::bf16, shape);

  std::vector<std::uint8_t> pool_contents(pool.bytes());
  // New contents at the same addresses: inputs, segmentation (with padding), slots, order, checkpoint starts.
  auto refill = [&](int round) {
    spec.seqlens.clear();
    const std::vector<std::int64_t> offsets = random_offsets(T, N, round % 2 == 0 ? 3 : 0, rng);
    reference::testing::RandomProblem problem(spec, 5000 + static_cast<std::uint64_t>(round));
    q.upload(problem.q.data(), q.bytes());
    k.upload(problem.k.data(), k.bytes());
    v.upload(problem.v.data(), v.bytes());
    g.upload(problem.g.data(), g.bytes());
    beta.upload(problem.beta.data(), beta.bytes());
    a_log.upload(problem.a_log.data(), a_log.bytes());
    dt_bias.upload(problem.dt_bias.data(), dt_bias.bytes());
    cu.upload(offsets.data(), cu.bytes());
    std::vector<std::int32_t> slots(kSlots);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    indices.upload(slots.data(), indices.bytes());
    std::vector<std::int32_t> perm(N);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    order.upload(perm.data(), order.bytes());
    std::vector<std::int64_t> first_rows = {0};
    for (std::int64_t i = 0; i < N; ++i) {
      first_rows.push_back(first_rows.back() + (offsets[i + 1] - offsets[i] + kEvery - 1) / kEvery);
    }
    starts.upload(first_rows.data(), starts.bytes());
    for (std::uint8_t& b : pool_contents) {
      b = static_cast<std::uint8_t>(rng() % 64); // small finite bf16 values
    }
  };
  auto reset_outputs = [&] {
    pool.upload(pool_contents.data(), pool.bytes());
    out.poison();
    rows.poison();
  };
  auto results = [&] {
    std::vector<std::uint8_t> bytes(out.bytes() + pool.bytes() + rows.bytes());
    out.download(bytes.data(), out.bytes());
    pool.download(bytes.data() + out.bytes(), pool.bytes());
    rows.download(bytes.data() + out.bytes() + pool.bytes(), rows.bytes());
    return bytes;
  };

  refill(0);
  const PrefillPlan plan(a);
  DeviceArray workspace(static_cast<std::size_t>(plan.workspace_bytes()));
  Stream s;
  a.stream = s.s;
  reset_outputs();
  plan.run(a, workspace.data(), plan.workspace_bytes()); // warm-up outside capture
  KDA_CU(cuStreamSynchronize, s.s);
  Graph graph;
  KDA_CU(cuStreamBeginCapture, s.s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  plan.run(a, workspace.data(), plan.workspace_bytes());
  KDA_CU(cuStreamEndCapture, s.s, &graph.graph);
  KDA_CU(cuGraphInstantiateWithFlags, &graph.exec, graph.graph, 0ull);

  int identical = 0;
  std::size_t unwritten_outputs = 0;
  for (int round = 0; round < 50; ++round) {
    refill(round);
    reset_outputs();
    KDA_CU(cuGraphLaunch, graph.exec, s.s);
    KDA_CU(cuStreamSynchronize, s.s);
    const std::vector<std::uint8_t> replayed = results();
    reset_outputs();
    recurrent_kda_prefill(a);
    KDA_CU(cuStreamSynchronize, s.s);
    identical += replayed == results() ? 1 : 0;
    // every output row of the call was written (poison 0xffff is a NaN)
    for (std::size_t i = 0; i + 1 < out.bytes(); i += 2) {
      unwritten_outputs += replayed[i] == 0xff && replayed[i + 1] == 0xff ? 1 : 0;
    }
  }
  CHECK(identical == 50);
  CHECK(unwritten_outputs == 0);
}

TEST_CASE("gpu plan: overlapped runs and their replays reset the ready flags on the device and equal eager calls",
          "[gpu][plan][graph][contract]") {
  DeviceProblem p(1, 8192, 64, 1101); // H64 fixed 8192: the eager call overlaps
  const PrefillPlan plan(p.args(nullptr));
  INFO(plan.prepare_overlap_reason());
  REQUIRE(plan.prepare_overlapped());
  DeviceArray workspace(static_cast<std::size_t>(plan.workspace_bytes()));
  Stream s;
  // Other contents at the same addresses before each call (two random
  // problems in turn): a flag left set by the run before would let the
  // recurrence read the old records.
  const reference::testing::RandomProblem other(p.spec, 7001);
  auto eager_result = [&] {
    p.reset();
    const PrefillResult r = recurrent_kda_prefill(p.args(s.s));
    CHECK(r.prepare_overlapped);
    return p.result();
  };
  int planned_identical = 0;
  for (int round = 0; round < 3; ++round) {
    refill(p, other, round);
    const std::vector<std::uint8_t> eager = eager_result();
    p.reset();
    plan.run(p.args(s.s), workspace.data(), plan.workspace_bytes());
    planned_identical += p.result() == eager ? 1 : 0;
  }
  CHECK(planned_identical == 3);

  Graph graph;
  capture_run(plan, p, s, workspace, graph);
  CHECK(identical_replays(graph, p, other, s, 6, eager_result) == 6);
}

TEST_CASE("gpu plan: the split's planned runs and replays equal its eager calls and the direct grid",
          "[gpu][plan][graph][contract]") {
  // B8 T1024 H16: 128 (sequence, head) items of 32 chunks, the recurrence on
  // the model's R CTAs, the prepare kernel walking their items beside it
  DeviceProblem p(8, 1024, 16, 1201);
  PrefillOptions split;
  split.schedule = "sm90_wgmma_c32_split";
  const PrefillPlan plan(p.args(nullptr), split);
  INFO(plan.prepare_overlap_reason());
  REQUIRE(plan.prepare_overlapped());
  CHECK_THAT(plan.prepare_overlap_reason(), Contains("split"));
  PrefillOptions direct;
  direct.schedule = "sm90_wgmma_c32";
  direct.prepare_overlap = false;
  DeviceArray workspace(static_cast<std::size_t>(plan.workspace_bytes()));
  Stream s;
  const reference::testing::RandomProblem other(p.spec, 7101);
  auto eager_result = [&](const PrefillOptions& options) {
    p.reset();
    recurrent_kda_prefill(p.args(s.s), options);
    return p.result();
  };
  int identical = 0;
  for (int round = 0; round < 3; ++round) {
    refill(p, other, round);
    const std::vector<std::uint8_t> reference_bits = eager_result(direct);
    identical += eager_result(split) == reference_bits ? 1 : 0;
    p.reset();
    plan.run(p.args(s.s), workspace.data(), plan.workspace_bytes());
    identical += p.result() == reference_bits ? 1 : 0;
  }
  CHECK(identical == 6);
  Graph graph;
  capture_run(plan, p, s, workspace, graph);
  CHECK(identical_replays(graph, p, other, s, 6, [&] { return eager_result(direct); }) == 6);
}

TEST_CASE("gpu plan: a run makes no more driver calls than the eager call", "[gpu][plan][contract]") {
  for (const auto& [tokens, heads] : {std::pair<std::int64_t, std::int64_t>{600, 8}, {8192, 64}}) {
    DeviceProblem p(1, tokens, heads, 1201);
    const PrefillPlan plan(p.args(nullptr));
    DeviceArray workspace(static_cast<std::size_t>(plan.workspace_bytes()));
    Stream s;
    recurrent_kda_prefill(p.args(s.s)); // warm: the stream's scratch exists
    plan.run(p.args(s.s), workspace.data(), plan.workspace_bytes());
    KDA_CU(cuStreamSynchronize, s.s);
    auto driver_calls = [&](const std::function<void()>& call) {
      runtime::set_driver_metering(true);
      const runtime::DriverCallTally before = runtime::driver_call_tally();
      call();
      const runtime::DriverCallTally after = runtime::driver_call_tally();
      runtime::set_driver_metering(false);
      return after.calls - before.calls;
    };
    const std::int64_t eager = driver_calls([&] { recurrent_kda_prefill(p.args(s.s)); });
    const std::int64_t planned = driver_calls([&] { plan.run(p.args(s.s), workspace.data(), plan.workspace_bytes()); });
    KDA_CU(cuStreamSynchronize, s.s);
    INFO(fmt::format("{} tokens, {} heads, {}: eager {} driver calls, planned {}", tokens, heads,
                     plan.prepare_overlap_reason(), eager, planned));
    CHECK(eager > 0);
    CHECK(planned <= eager);
  }
}

TEST_CASE("gpu plan: the driver meter times a call until its first enqueue", "[gpu][plan]") {
  DeviceProblem p(1, 600, 8, 1203);
  const PrefillPlan plan(p.args(nullptr));
  DeviceArray workspace(static_cast<std::size_t>(plan.workspace_bytes()));
  Stream s;
  recurrent_kda_prefill(p.args(s.s));
  KDA_CU(cuStreamSynchronize, s.s);
  runtime::set_driver_metering(true);
  auto metered = [&](const std::function<void()>& call) {
    const runtime::DriverCallTally before = runtime::driver_call_tally();
    const auto t0 = std::chrono::steady_clock::now();
    runtime::mark_driver_call_start();
    call();
    const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
    const runtime::DriverCallTally after = runtime::driver_call_tally();
    return std::tuple{after.marks_reached - before.marks_reached,
                      after.until_first_enqueue_nanoseconds - before.until_first_enqueue_nanoseconds, wall.count()};
  };
  const auto [eager_marks, eager_ns, eager_wall] = metered([&] { recurrent_kda_prefill(p.args(s.s)); });
  const auto [run_marks, run_ns, run_wall] =
      metered([&] { plan.run(p.args(s.s), workspace.data(), plan.workspace_bytes()); });
  // a mark followed by no enqueue adds nothing, and is replaced by the next
  const auto [idle_marks, idle_ns, idle_wall] = metered([] {});
  const auto [next_marks, next_ns, next_wall] = metered([&] { recurrent_kda_prefill(p.args(s.s)); });
  // switching the meter drops a pending mark: a call that failed before it
  // enqueued leaves nothing for the next metered call to be charged with
  runtime::mark_driver_call_start();
  runtime::set_driver_metering(false);
  runtime::set_driver_metering(true);
  const runtime::DriverCallTally before_unmarked = runtime::driver_call_tally();
  recurrent_kda_prefill(p.args(s.s));
  const runtime::DriverCallTally after_unmarked = runtime::driver_call_tally();
  runtime::set_driver_metering(false);
  KDA_CU(cuStreamSynchronize, s.s);
  CHECK(after_unmarked.marks_reached == before_unmarked.marks_reached);
  CHECK(after_unmarked.calls > before_unmarked.calls);
  INFO(fmt::format("eager {} of {} ns, run {} of {} ns", eager_ns, eager_wall, run_ns, run_wall));
  CHECK(eager_marks == 1);
  CHECK(eager_ns > 0);
  CHECK(eager_ns <= eager_wall);
  CHECK(run_marks == 1);
  CHECK(run_ns > 0);
  CHECK(run_ns <= run_wall);
  CHECK(idle_marks == 0);
  CHECK(idle_ns == 0);
  CHECK(next_marks == 1);
  CHECK(next_ns <= next_wall);
}
