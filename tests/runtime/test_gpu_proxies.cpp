// The plans the H200 runs only through a proxy, each against the fp64
// reference. The SM120 designs (sm120_decomposed_c16, sm120_c32) through the sm_120a
// proxy: the sm_120a plan as it is (SM120's 101,376 B per block) compiled for
// sm_90a. The fused tcgen05 kernels (sm100_m128_c32, sm100_m64_c32,
// sm100_n16_c16) through the sm_90a proxy: each plan is the schedule's (producer
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

struct Proxied {
  const char* schedule;
  const char* target;
};
constexpr Proxied k_proxied[] = {{"sm120_decomposed_c16", "sm_120a_proxy"},
                                 {"sm120_c32", "sm_120a_proxy"},
                                 {"sm100_m128_c32", "sm_90a_proxy"},
                                 {"sm100_m64_c32", "sm_90a_proxy"},
                                 {"sm100_n16_c16", "sm_90a_proxy"}};

GpuCase proxy_case(std::string label, ProblemSpec spec, GpuStateMode state, std::uint64_t seed) {
  GpuCase c;
  c.label = std::move(label);
  c.spec = std::move(spec);
  c.state = state;
  c.seed = seed;
  return c;
}

void run(GpuCase c) {
  for (const Proxied& d : k_proxied) {
    c.target = d.target;
    const GpuCaseReport r = run_gpu_case(c, d.schedule);
    CHECK(r.schedule == d.schedule);
    CHECK(r.target == d.target);
    WARN(d.schedule << " on " << d.target << " " << c.label << ": rel RMS worst (seq, head) out "
                    << r.worst_output_rel_rms << " state " << r.worst_state_rel_rms);
  }
}

} // namespace

TEST_CASE("gpu proxies: the SM120 decomposed plan (sm_120a proxy) and the fused tcgen05 M128, M64 and N16 plans "
          "(sm_90a proxy) meet spec section 8 on the H200",
          "[gpu][prefill][tcgen05][sm120]") {
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
