// GPU correctness of recurrent_kda_prefill (issue 3, item 6): every case runs
// the routed kernel on the device and compares with the fp64 token reference
// (gpu_prefill_case.hpp has the tolerances). Run on the GPU machine with
// scripts/gpu-tests.sh.
#include "gpu_prefill_case.hpp"

#include "compiler/errors.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/target.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace kda::test;
using kda::reference::testing::GateDistribution;
using kda::reference::testing::ProblemSpec;

namespace {

void report(const GpuCase& c, const GpuCaseReport& r) {
  WARN(c.label << ": " << r.schedule << " on " << r.target << ", rel RMS worst (seq, head) out " << r.worst_output_rel_rms
               << " state " << r.worst_state_rel_rms << ", whole out " << r.whole_output_rel_rms << " state "
               << r.whole_state_rel_rms);
}

void run(const GpuCase& c, const std::optional<std::string>& schedule = std::nullopt) {
  report(c, run_gpu_case(c, schedule));
}

} // namespace

TEST_CASE("gpu prefill: fixed layout, short sequences around the chunk size", "[gpu][prefill]") {
  for (std::int64_t t : {15, 16, 17, 33}) {
    run({"fixed B3 T" + std::to_string(t) + " H2 bf16 in place", fixed(3, t, 2), GpuStateMode::inplace_bf16, false,
         static_cast<std::uint64_t>(t)});
  }
  run({"fixed B2 T17 H64 fp32 in place", fixed(2, 17, 64), GpuStateMode::inplace_fp32, false, 3});
  run({"fixed B1 T33 H96 no state", fixed(1, 33, 96), GpuStateMode::none, false, 4});
  run({"fixed B2 T33 H12 final bf16 allocated", fixed(2, 33, 12), GpuStateMode::final_bf16, false, 5});
  run({"fixed B2 T16 H1 final fp32 caller", fixed(2, 16, 1), GpuStateMode::final_fp32_caller, false, 6});
}

TEST_CASE("gpu prefill: fixed layout, long sequences", "[gpu][prefill]") {
  run({"fixed B2 T1000 H12 fp32 in place", fixed(2, 1000, 12), GpuStateMode::inplace_fp32, false, 11});
  run({"fixed B1 T8192 H2 bf16 in place", fixed(1, 8192, 2), GpuStateMode::inplace_bf16, false, 12});
  run({"fixed B1 T65536 H1 fp32 in place", fixed(1, 65536, 1), GpuStateMode::inplace_fp32, false, 13});
}

TEST_CASE("gpu prefill: gate extremes at lower_bound -5", "[gpu][prefill]") {
  run({"g=-8 fixed B1 T2048 H2", fixed(1, 2048, 2, GateDistribution::all_minus_8), GpuStateMode::inplace_bf16, false,
       21});
  run({"g=+8 fixed B1 T2048 H2", fixed(1, 2048, 2, GateDistribution::all_plus_8), GpuStateMode::inplace_fp32, false,
       22});
  run({"dt_bias U[-8,8] fixed B1 T2048 H2", fixed(1, 2048, 2, GateDistribution::bias_uniform_8),
       GpuStateMode::inplace_bf16, false, 23});
  // one-token sequences at fast decay: the output is q . k v beta alone, a
  // near-cancelling dot product (sm90_wgmma_c32 forms Mqk's diagonal from the
  // raw rows for it, schedules/README.md)
  ProblemSpec ones = packed({1, 1, 2, 1, 0, 1, 33, 1, 1, 1}, 16);
  ones.gate = GateDistribution::all_plus_8;
  run({"g=+8 packed one-token seqs H16 fp32", ones, GpuStateMode::inplace_fp32, false, 24});
}

// The fused persistent design (sm90_wgmma_c16_fused) prepares its chunks
// inside the recurrence's CTA, one four-warp group per tile (two sequences of
// at most 8 tokens share one): the same gate extremes and one-token sequences
// at fast decay, and many short sequences per CTA, most of them paired.
TEST_CASE("gpu prefill: the fused persistent design at the gate extremes and on short sequences", "[gpu][prefill]") {
  const std::optional<std::string> fused("sm90_wgmma_c16_fused");
  run({"fused: g=-8 fixed B1 T2048 H2", fixed(1, 2048, 2, GateDistribution::all_minus_8), GpuStateMode::inplace_bf16,
       false, 121},
      fused);
  run({"fused: g=+8 fixed B1 T2048 H2", fixed(1, 2048, 2, GateDistribution::all_plus_8), GpuStateMode::inplace_fp32,
       false, 122},
      fused);
  run({"fused: dt_bias U[-8,8] fixed B1 T2048 H2", fixed(1, 2048, 2, GateDistribution::bias_uniform_8),
       GpuStateMode::inplace_bf16, false, 123},
      fused);
  ProblemSpec ones = packed({1, 1, 2, 1, 0, 1, 33, 1, 1, 1}, 16);
  ones.gate = GateDistribution::all_plus_8;
  run({"fused: g=+8 packed one-token seqs H16 fp32", ones, GpuStateMode::inplace_fp32, false, 124}, fused);
  std::mt19937_64 rng(125);
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 300; ++i) {
    lengths.push_back(1 + static_cast<std::int64_t>(rng() % 24));
  }
  run({"fused: packed 300 seqs (1..24 tokens) H8 bf16", packed(lengths, 8), GpuStateMode::inplace_bf16, true, 126},
      fused);
}

TEST_CASE("gpu prefill: packed layout with tiny and zero-length sequences", "[gpu][prefill]") {
  std::mt19937_64 rng(31);
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 64; ++i) {
    const int kind = static_cast<int>(rng() % 4);
    lengths.push_back(kind == 0 ? 0 : kind == 1 ? 1 + static_cast<std::int64_t>(rng() % 4)
                                                : 1 + static_cast<std::int64_t>(rng() % 70));
  }
  run({"packed 64 seqs (0..70 tokens) H2 bf16 int32", packed(lengths, 2), GpuStateMode::inplace_bf16, true, 31});
  run({"packed 64 seqs (0..70 tokens) H12 fp32 int64", packed(lengths, 12), GpuStateMode::inplace_fp32, false, 32});
  run({"packed 64 seqs final bf16", packed(lengths, 2), GpuStateMode::final_bf16, false, 33});
  run({"packed [1300,547,2048,963,271,3063] H4 no state", packed({1300, 547, 2048, 963, 271, 3063}, 4),
       GpuStateMode::none, true, 34});
  run({"packed [17,33,65,300,1000] H4 bf16", packed({17, 33, 65, 300, 1000}, 4), GpuStateMode::inplace_bf16, false,
       35});
  run({"packed [0,1,2,3,4,0] H96 fp32", packed({0, 1, 2, 3, 4, 0}, 96), GpuStateMode::inplace_fp32, true, 36});
}

// Up to 31 sequences no chunk_offsets kernel runs: each CTA derives the chunk
// offsets and the longest-first order from cu_seqlens in one warp
// (common/sequences, WARP_TABLE_MAX_SEQUENCES). 32 sequences write the
// workspace's table first, then 31 other lengths (empties, ties, every
// bucket up to 20 chunks) run on the same stream: a kernel that still read
// the table would read the 32-sequence call's stale offsets and fail. Routed
// (chunk 32, wgmma) and portable_c16 (chunk 16, warp_mma recurrence).
TEST_CASE("gpu prefill: packed layout at the warp sequence table's limit (32, then 31 sequences)", "[gpu][prefill]") {
  std::mt19937_64 rng(43);
  const std::int64_t choices[] = {0, 1, 31, 32, 33, 64, 97, 200, 350, 640};
  std::vector<std::int64_t> table(32);
  std::vector<std::int64_t> warp(31);
  for (std::int64_t& l : table) {
    l = choices[rng() % 10];
  }
  for (std::int64_t& l : warp) {
    l = choices[rng() % 10];
  }
  warp.front() = 0; // empties at both ends and a run of equal lengths
  warp.back() = 0;
  warp[10] = warp[11] = warp[12] = 97;
  for (const std::optional<std::string>& schedule : {std::optional<std::string>(), std::optional<std::string>("portable_c16")}) {
    const std::string on = schedule ? ", " + *schedule : std::string();
    run({"packed 32 seqs (table) H3 bf16" + on, packed(table, 3), GpuStateMode::inplace_bf16, false, 44}, schedule);
    run({"packed 31 seqs (warp table) H3 fp32" + on, packed(warp, 3), GpuStateMode::inplace_fp32, true, 45}, schedule);
  }
}

// The recurrence takes the sequences longest first (common/sequences: a
// counting sort in the chunk_offsets kernel, one tile of 256 sequences at a
// time): 300 sequences of every length bucket from empty to 20 chunks, so the
// order spans two tiles and equal buckets cross the tile boundary; every
// (sequence, head) must be computed exactly once (outputs are poisoned first).
TEST_CASE("gpu prefill: packed layout, 300 sequences in two tiles of the sequence order", "[gpu][prefill]") {
  std::mt19937_64 rng(37);
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 300; ++i) {
    const std::int64_t choices[] = {0, 1, 31, 32, 33, 64, 97, 200, 350, 640};
    lengths.push_back(choices[rng() % 10]);
  }
  run({"packed 300 seqs (0..640 tokens) H2 bf16 int32", packed(lengths, 2), GpuStateMode::inplace_bf16, true, 38});
  run({"packed 300 seqs (0..640 tokens) H3 fp32 int64, sm90_wgmma_c16", packed(lengths, 3),
       GpuStateMode::inplace_fp32, false, 39},
      std::string("sm90_wgmma_c16"));
}

// A prepare CTA finds its chunk's sequence by a radix-32 search over the chunk
// offsets (common/sequences: one level up to 31 sequences, two up to 1,023,
// three beyond; the 300-sequence case above takes two): 1,100 short sequences,
// empty ones and runs of them among them, through the chunk-32 prepare kernel
// (routed) and the chunk-16 one (portable_c16).
TEST_CASE("gpu prefill: packed layout, 1,100 short sequences (three levels of the chunk lookup)", "[gpu][prefill]") {
  std::mt19937_64 rng(41);
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 1100; ++i) {
    const std::int64_t choices[] = {0, 0, 1, 3, 17, 32, 40};
    lengths.push_back(choices[rng() % 7]);
  }
  run({"packed 1100 seqs (0..40 tokens) H2 bf16 int32", packed(lengths, 2), GpuStateMode::inplace_bf16, true, 42});
  run({"packed 1100 seqs (0..40 tokens) H2 fp32 int64, portable_c16", packed(lengths, 2), GpuStateMode::inplace_fp32, false,
       43},
      std::string("portable_c16"));
}

TEST_CASE("gpu prefill: strided beta", "[gpu][prefill]") {
  ProblemSpec s = fixed(2, 100, 3);
  s.beta_row_stride = 8;
  run({"fixed B2 T100 H3 beta row stride 8", s, GpuStateMode::inplace_bf16, false, 41});
}

std::vector<std::string> schedules_with_a_generator() {
  std::vector<std::string> names;
  for (const kda::Schedule& s : kda::shipped_schedules()) {
    try {
      kda::find_family_recipe(s);
      // a target CC 9.0 runs (sm_90a, a portable sm_80 or sm_90 build); the
      // Blackwell and SM120 designs run here through their proxies (test_gpu_proxies)
      const bool runs_here = std::any_of(s.targets.begin(), s.targets.end(), [](const std::string& name) {
        const std::optional<kda::Target> t = kda::find_target(name);
        return t && t->cc_major <= 9;
      });
      if (runs_here) {
        names.push_back(s.name);
      }
    } catch (const kda::ScheduleError&) {
      // a plan without a generator (test schedules only)
    }
  }
  return names;
}

TEST_CASE("gpu prefill: every shipped schedule with a generator, forced", "[gpu][prefill]") {
  const std::vector<std::string> schedules = schedules_with_a_generator();
  REQUIRE(schedules.size() >= 5);
  for (const std::string& schedule : schedules) {
    std::mt19937_64 rng(51);
    std::vector<std::int64_t> lengths;
    for (int i = 0; i < 24; ++i) {
      lengths.push_back(static_cast<std::int64_t>(rng() % 90));
    }
    run({schedule + ": fixed B2 T1000 H12 fp32", fixed(2, 1000, 12), GpuStateMode::inplace_fp32, false,
         52},
        schedule);
    run({schedule + ": packed 24 seqs (0..89) H3 bf16", packed(lengths, 3), GpuStateMode::inplace_bf16, true,
         53},
        schedule);
    // four sequences of 96 heads: more items than a persistent grid has CTAs, so
    // its state tiles are reused by items without an initial state
    run({schedule + ": fixed B4 T33 H96 final bf16", fixed(4, 33, 96), GpuStateMode::final_bf16, false, 54},
        schedule);
  }
}

// schedule prepare_overlap (runtime/prepare_overlap.hpp): the prepare kernel
// runs beside the recurrence when the (sequence, head) pairs leave SMs free.
// Same kernels, same arithmetic: the results are bit-identical to the kernels
// run one after the other, and both meet spec section 8.
TEST_CASE("gpu prefill: prepare beside the recurrence gives the same bits as one after the other", "[gpu][prefill]") {
  const std::string schedule = "sm90_wgmma_c32";
  std::mt19937_64 rng(61);
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 9; ++i) {
    lengths.push_back(i == 4 ? 0 : static_cast<std::int64_t>(rng() % 700));
  }
  // Long enough that the overlap takes at least min_saving_us (20 us) of
  // prepare off the critical path under the shipped model (rho = 0.42 chunks
  // per us per SM: (chunks - lead) x pairs >= 1,109 on 132 SMs).
  const std::vector<GpuCase> cases = {
      {"fixed B1 T4096 H16 bf16", fixed(1, 4096, 16), GpuStateMode::inplace_bf16, false, 62},
      {"fixed B2 T3000 H12 fp32", fixed(2, 3000, 12), GpuStateMode::inplace_fp32, false, 63},
      {"packed 9 seqs (one empty) H5 bf16", packed(lengths, 5), GpuStateMode::inplace_bf16, true, 64},
      {"fixed B1 T6000 H8 g=+8 final", fixed(1, 6000, 8, GateDistribution::all_plus_8), GpuStateMode::final_bf16,
       false, 65},
  };
  for (const GpuCase& c : cases) {
    const GpuCaseReport together = run_gpu_case(c, schedule);
    report(c, together);
    CHECK(together.prepare_overlapped);
    GpuCase apart = c;
    apart.prepare_overlap = false;
    const GpuCaseReport sequential = run_gpu_case(apart, schedule);
    CHECK_FALSE(sequential.prepare_overlapped);
    INFO(c.label);
    CHECK(together.output_hash == sequential.output_hash);
  }
}
