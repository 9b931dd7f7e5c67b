// Issue 5, item 3: the fused tcgen05 kernels' sm_90a proxies on the H200
// (sm100_m128_c32, sm100_m64_c32, sm100_n16_c16). Each plan is the schedule's (producer
// groups, the ring and its mbarriers, chunk order, SMEM layout and aliasing,
// anchored preparation, blocked 8 -> 16 (-> 32) inverse); only templates/tcgen05/ops.cuh
// is replaced (tcgen05/proxy_ops: TMEM as a per-CTA global image, tcgen05.mma
// computed by the MMA warp from the same descriptors). Spec section 8 on
// fixed and packed input (tail chunks, zero-length sequences, ring wrap-around
// past five chunks), bf16 and fp32 state, the gate extremes. Run with
// scripts/gpu-tests.sh.
#include "gpu_prefill_case.hpp"

#include <catch2/catch.hpp>

using namespace kda::test;
using kda::reference::testing::GateDistribution;
using kda::reference::testing::ProblemSpec;

namespace {

GpuCase proxy_case(std::string label, ProblemSpec spec, GpuStateMode state, std::uint64_t seed) {
  GpuCase c;
  c.label = std::move(label);
  c.spec = std::move(spec);
  c.state = state;
  c.seed = seed;
  c.target = "sm_90a_proxy";
  return c;
}

void run_one(const GpuCase& c, const std::string& schedule) {
  const GpuCaseReport r = run_gpu_case(c, schedule);
  CHECK(r.schedule == schedule);
  CHECK(r.target == "sm_90a_proxy");
  WARN(schedule << " " << c.label << ": rel RMS worst (seq, head) out " << r.worst_output_rel_rms << " state "
                << r.worst_state_rel_rms);
}

void run(const GpuCase& c) {
  for (const char* schedule : {"sm100_m128_c32", "sm100_m64_c32", "sm100_n16_c16"}) {
    run_one(c, schedule);
  }
}

} // namespace

TEST_CASE("gpu tcgen05 proxy: the fused M128, M64 and N16 plans meet spec section 8 on the H200",
          "[gpu][prefill][tcgen05]") {
  run(proxy_case("fixed B3 T33 H2 bf16 in place", fixed(3, 33, 2), GpuStateMode::inplace_bf16, 501));
  run(proxy_case("fixed B2 T400 H3 fp32 in place (ring wraps 2.5 times)", fixed(2, 400, 3), GpuStateMode::inplace_fp32,
                 502));
  ProblemSpec p;
  p.heads = 2;
  p.seqlens = {1, 0, 31, 32, 33, 200, 0, 7};
  for (std::int64_t l : p.seqlens) {
    p.tokens += l;
  }
  run(proxy_case("packed [1,0,31,32,33,200,0,7] H2 bf16 in place", p, GpuStateMode::inplace_bf16, 503));
  run(proxy_case("packed [1,0,31,32,33,200,0,7] H2 final fp32", p, GpuStateMode::final_fp32_caller, 504));
  run(proxy_case("g=+8 fixed B1 T300 H2", fixed(1, 300, 2, GateDistribution::all_plus_8), GpuStateMode::inplace_fp32,
                 505));
  run(proxy_case("g=-8 fixed B1 T300 H2", fixed(1, 300, 2, GateDistribution::all_minus_8), GpuStateMode::inplace_bf16,
                 506));
  run(proxy_case("dt_bias U[-8,8] fixed B1 T300 H2", fixed(1, 300, 2, GateDistribution::bias_uniform_8),
                 GpuStateMode::none, 507));
}
