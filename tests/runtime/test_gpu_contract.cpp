// GPU tests of the serving-engine contract (spec sections 1.4, 1.5 and 8):
// state pools, native checkpoints and the caller's seq_order through the
// public API, for every family that runs here (wgmma, warp_mma) and the
// tcgen05 plans through their sm_90a proxy, against the fp64 reference
// (gpu_contract_case.hpp has the tolerances). scripts/gpu-tests.sh runs them.
#include "gpu_contract_case.hpp"
#include "gpu_prefill_case.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using Catch::Matchers::Contains;

using namespace kda::test;
using kda::reference::testing::ProblemSpec;

namespace {

ContractReport run(ContractCase c) {
  const ContractReport r = run_contract_case(c);
  WARN(c.label << ": " << r.schedule << " on " << r.target << ", worst rel RMS out " << r.worst_output_rel_rms
               << " state " << r.worst_state_rel_rms << " checkpoints " << r.worst_checkpoint_rel_rms << " ("
               << r.checkpoint_rows << " rows)");
  return r;
}

// Lengths around the intervals: empty, shorter than, equal to and longer
// than one interval of 16..64 tokens, and a long one.
const std::vector<std::int64_t> k_lengths = {0, 5, 16, 17, 31, 32, 33, 48, 49, 64, 65, 96, 130, 0, 700};

// The families that run on the H200, each forced (the routed choice is
// sm90_wgmma_c32), the tcgen05 plans through their sm_90a proxy, the SM120
// designs through the sm_120a proxy, and the LLVM tier's token kernel.
struct Design {
  std::string schedule;
  std::optional<std::string> target;
};
const std::vector<Design> k_designs = {{"sm90_wgmma_c32", std::nullopt},  {"sm90_wgmma_c16", std::nullopt},
                                       {"portable_c16", std::nullopt},    {"sm100_m128_c32", "sm_90a_proxy"},
                                       {"sm100_m64_c32", "sm_90a_proxy"}, {"sm100_n16_c16", "sm_90a_proxy"},
                                       {"sm120_decomposed_c16", "sm_120a_proxy"}, {"sm120_c32", "sm_120a_proxy"},
                                       {"token_llvm", std::nullopt}, {"token_llvm_smem", std::nullopt},
                                       {"sm90_wgmma_c16_fused", std::nullopt}};

} // namespace

TEST_CASE("gpu contract: state pools with more slots than sequences and a padded slot pitch", "[gpu][contract]") {
  for (const Design& d : k_designs) {
    ContractCase c;
    c.schedule = d.schedule;
    c.target = d.target;
    c.label = d.schedule + ": packed 15 seqs H3 bf16 pool 40 slots, pitch + 8";
    c.spec = packed(k_lengths, 3);
    c.pool_slots = 40;
    c.pool_pitch_pad = 8;
    c.seed = 101;
    run(c);
    c.label = d.schedule + ": fixed B3 T200 H2 fp32 pool 7 slots, pitch + 4";
    c.spec = fixed(3, 200, 2);
    c.fp32_state = true;
    c.pool_slots = 7;
    c.pool_pitch_pad = 4;
    c.seed = 102;
    run(c);
  }
}

TEST_CASE("gpu contract: native checkpoints every 16, 32, 48 and 64 tokens", "[gpu][contract]") {
  // routed: an interval the chunk-32 schedule does not divide goes to a chunk-16 one
  for (const std::int64_t every : {16, 32, 48, 64}) {
    ContractCase c;
    c.label = "routed: packed 15 seqs H2 bf16, every " + std::to_string(every);
    c.spec = packed(k_lengths, 2);
    c.checkpoint_every = every;
    c.seed = 200 + static_cast<std::uint64_t>(every);
    const ContractReport r = run(c);
    CHECK((every % 32 == 0 ? r.schedule == "sm90_wgmma_c32" : r.schedule != "sm90_wgmma_c32"));
    std::int64_t rows = 0;
    for (std::int64_t l : k_lengths) {
      rows += (l + every - 1) / every;
    }
    CHECK(r.checkpoint_rows == rows);
  }
  for (const Design& d : k_designs) {
    const std::int64_t every = d.schedule.find("c32") != std::string::npos ? 32 : 16;
    ContractCase c;
    c.schedule = d.schedule;
    c.target = d.target;
    c.label = d.schedule + ": packed 15 seqs H2 fp32 pool, every " + std::to_string(every);
    c.spec = packed(k_lengths, 2);
    c.fp32_state = true;
    c.pool_slots = 20;
    c.checkpoint_every = every;
    c.seed = 210;
    run(c);
    c.label = d.schedule + ": fixed B2 T100 H3 no initial state, every 64";
    c.spec = fixed(2, 100, 3);
    c.fp32_state = false;
    c.initial_state = false;
    c.pool_slots = 0;
    c.checkpoint_every = 64;
    c.seed = 211;
    run(c);
  }
  // two CTAs per (sequence, head) (M tile 64): each stages and copies its half of every row
  ContractCase c;
  c.schedule = "sm90_wgmma_c16_m64";
  c.label = "sm90_wgmma_c16_m64: packed 15 seqs H2 fp32 pool, every 16";
  c.spec = packed(k_lengths, 2);
  c.fp32_state = true;
  c.pool_slots = 20;
  c.checkpoint_every = 16;
  c.seed = 212;
  run(c);
  c.label = "sm90_wgmma_c16_m64: fixed B2 T100 H3 no initial state, every 48";
  c.spec = fixed(2, 100, 3);
  c.fp32_state = false;
  c.initial_state = false;
  c.pool_slots = 0;
  c.checkpoint_every = 48;
  c.seed = 213;
  run(c);
}

TEST_CASE("gpu contract: results do not depend on seq_order (bit-identical)", "[gpu][contract]") {
  // 15 sequences (the warp table) and 40 (the chunk_offsets kernel's table)
  std::vector<std::int64_t> many = k_lengths;
  std::mt19937_64 rng(301);
  while (many.size() < 40) {
    many.push_back(static_cast<std::int64_t>(rng() % 300));
  }
  for (const Design& d : k_designs) {
    for (const std::vector<std::int64_t>* lengths : {&k_lengths, static_cast<const std::vector<std::int64_t>*>(&many)}) {
      ContractCase c;
      c.schedule = d.schedule;
      c.target = d.target;
      c.spec = packed(*lengths, 2);
      c.pool_slots = static_cast<std::int64_t>(lengths->size()) + 3;
      c.checkpoint_every = d.schedule.find("c32") != std::string::npos ? 64 : 48;
      c.seed = 302;
      const std::string what = d.schedule + ": packed " + std::to_string(lengths->size()) + " seqs H2";
      c.label = what + ", longest first";
      const ContractReport none = run(c);
      c.label = what + ", seq_order A";
      c.seq_order = random_order(static_cast<std::int64_t>(lengths->size()), 303);
      const ContractReport a = run(c);
      c.label = what + ", seq_order B (reversed A)";
      std::reverse(c.seq_order.begin(), c.seq_order.end());
      const ContractReport b = run(c);
      INFO(what);
      CHECK(a.hash == none.hash);
      CHECK(b.hash == none.hash);
    }
  }
}

// The persistent grid (wgmma/recurrence_persistent) runs the direct design's
// prepare kernel and chunk step over several work items per CTA: 400
// sequences of 0 to 100 tokens x 2 heads are 800 items on the H200's 132
// CTAs (about six each, of unequal length: the ring's phases run on across
// them). Same arithmetic as the direct grid, so the same bits, with pools,
// checkpoints and the caller's seq_order; and a fixed layout with an fp32
// state. The fused chunk-16 design (wgmma/fused_persistent) forms the same
// records inside the CTA, two short sequences' chunks per tile where it can:
// the same bits again.
TEST_CASE("gpu contract: the persistent grid gives the direct grid's bits over many work items per CTA",
          "[gpu][contract]") {
  std::mt19937_64 rng(401);
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 400; ++i) {
    lengths.push_back(static_cast<std::int64_t>(rng() % 101));
  }
  // the case on the direct grid, then on the persistent one: the same bytes
  auto same_bits = [](ContractCase c, const std::string& direct, const std::string& what) {
    c.schedule = direct;
    c.label = direct + ": " + what;
    const ContractReport a = run(c);
    std::vector<std::string> others = {direct + "_persistent"};
    if (direct == "sm90_wgmma_c16") {
      others.push_back("sm90_wgmma_c16_fused");
    }
    for (const std::string& other : others) {
      c.schedule = other;
      c.label = other + ": " + what;
      const ContractReport b = run(c);
      CHECK(b.schedule == other);
      CHECK(b.hash == a.hash);
    }
  };
  for (const char* chunk : {"c16", "c32"}) {
    const std::string direct = std::string("sm90_wgmma_") + chunk;
    ContractCase c;
    c.spec = packed(lengths, 2);
    c.pool_slots = 420;
    c.pool_pitch_pad = 8;
    c.checkpoint_every = std::string(chunk) == "c32" ? 32 : 16;
    c.seq_order = random_order(static_cast<std::int64_t>(lengths.size()), 402);
    c.seed = 403;
    same_bits(c, direct, "packed 400 seqs (0..100) H2 bf16 pool, checkpoints, seq_order");
    ContractCase f;
    f.spec = fixed(300, 40, 2);
    f.fp32_state = true;
    f.seed = 404;
    same_bits(f, direct, "fixed B300 T40 H2 fp32");
  }
  // many sequences of at most 8 tokens: the fused design prepares two of
  // them per tile (rows 0-7 and 8-15), with their records as the prepare
  // kernel writes them one by one
  std::vector<std::int64_t> short_lengths;
  for (int i = 0; i < 700; ++i) {
    short_lengths.push_back(static_cast<std::int64_t>(rng() % 11));
  }
  ContractCase s;
  s.spec = packed(short_lengths, 3);
  s.pool_slots = 720;
  s.checkpoint_every = 16;
  s.seed = 405;
  same_bits(s, "sm90_wgmma_c16", "packed 700 seqs (0..10) H3 bf16 pool, checkpoints");
  // the fixed layout's tiny sequences pair the same way
  ContractCase t;
  t.spec = fixed(500, 6, 2);
  t.fp32_state = true;
  t.seed = 406;
  same_bits(t, "sm90_wgmma_c16", "fixed B500 T6 H2 fp32");
}

TEST_CASE("gpu contract: the split (a persistent recurrence beside the walking prepare kernel) gives the direct "
          "grid's bits",
          "[gpu][contract]") {
  // sm90_wgmma_c32_split's records are the prepare kernel's (the walk hands
  // each chunk to the same code) and its recurrence is
  // sm90_wgmma_c32_persistent's, so every case must equal sm90_wgmma_c32 on
  // the direct grid, run one kernel after the other
  std::mt19937_64 rng(501);
  auto same_bits = [](ContractCase c, const std::string& what) {
    c.schedule = "sm90_wgmma_c32";
    c.prepare_overlap = false;
    c.label = "sm90_wgmma_c32: " + what;
    const ContractReport direct = run(c);
    c.schedule = "sm90_wgmma_c32_split";
    c.prepare_overlap = true;
    c.label = "sm90_wgmma_c32_split: " + what;
    const ContractReport split = run(c);
    INFO(split.prepare_overlap_reason);
    CHECK(split.schedule == "sm90_wgmma_c32_split");
    CHECK(split.prepare_overlapped);
    CHECK_THAT(split.prepare_overlap_reason, Contains("split"));
    CHECK(split.hash == direct.hash);
  };
  // more than 32 sequences, empty ones among them: the chunk_offsets kernel's
  // table and order; with the caller's seq_order; a pool and checkpoints
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 300; ++i) {
    lengths.push_back(i % 17 == 0 ? 0 : static_cast<std::int64_t>(rng() % 400));
  }
  ContractCase c;
  c.spec = packed(lengths, 3);
  c.pool_slots = 330;
  c.pool_pitch_pad = 8;
  c.checkpoint_every = 64;
  c.seed = 502;
  same_bits(c, "packed 300 seqs (0..399) H3 bf16 pool, checkpoints");
  c.seq_order = random_order(static_cast<std::int64_t>(lengths.size()), 503);
  c.seed = 504;
  same_bits(c, "packed 300 seqs (0..399) H3 bf16 pool, checkpoints, seq_order");
  // at most 32 sequences: the warp table's ranks
  std::vector<std::int64_t> few;
  // (sizes kept to what the fp64 reference computes in seconds: H16 and
  // lengths to 1999 took it past a minute)
  for (int i = 0; i < 20; ++i) {
    few.push_back(static_cast<std::int64_t>(rng() % 1000));
  }
  ContractCase w;
  w.spec = packed(few, 4);
  w.fp32_state = true;
  w.seed = 505;
  same_bits(w, "packed 20 seqs (0..999) H4 fp32");
  // the fixed layout, as h96_uniform_8x1024 at a 24th of the heads
  ContractCase f;
  f.spec = fixed(8, 1024, 4);
  f.seed = 506;
  same_bits(f, "fixed B8 T1024 H4 bf16");
}
