// The decision to run a prepare_overlap schedule's prepare kernel beside its
// recurrence (runtime/prepare_overlap.hpp), on simulated devices: the
// deadlock-freedom conditions, the per-quadrant register fit, the lead of the
// throughput model, and the grid limits.
#include "compiler/schedule_library.hpp"
#include "runtime/prepare_overlap.hpp"
#include "runtime/stream_workspace.hpp"

#include <cuda.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

using namespace kda;
using Catch::Matchers::Contains;

namespace {

// sm90_wgmma_c32 on an H200 (kdajit compile: prepare 64 registers, recurrence 168).
OverlapRequest h200(std::int64_t sequences, std::int64_t heads, std::int64_t chunks) {
  OverlapRequest r;
  r.sm_count = 132;
  r.sm = {233'472, 1'024, 65'536, 2'048};
  r.prepare = {256, 64, 54'656};
  r.recurrence = {288, 168, 152'640};
  r.sequences = sequences;
  r.heads = heads;
  r.pairs = sequences * heads;
  r.recurrence_ctas = r.pairs;
  r.chunks_per_sequence = chunks;
  r.chunk_grid_extent = chunks;
  return r;
}

const PrepareOverlapModel k_model{1.39, 0.313, 0.4, 2, 20.0};

} // namespace

TEST_CASE("prepare overlap: registers per block and per scheduler quadrant", "[runtime][overlap]") {
  CHECK(block_registers({288, 168, 0}) == 9 * 5'376);
  CHECK(block_registers({256, 64, 0}) == 8 * 2'048);
  CHECK(block_registers({32, 33, 0}) == 1'280); // 33 x 32 = 1,056 rounded up to 256
  OverlapRequest r = h200(1, 96, 256);
  // 9 recurrence warps put 3 x 5,376 registers on one quadrant: 256 left, no
  // room for the prepare CTA's 2 x 2,048 although the SM has 768 + 16,384 free.
  CHECK(block_registers(r.prepare) + block_registers(r.recurrence) <= r.sm.registers);
  CHECK_FALSE(prepare_fits_beside_recurrence(r));
  r.recurrence.threads = 256; // 8 warps: 2 x 5,376 + 2 x 2,048 = 14,848 <= 16,384
  CHECK(prepare_fits_beside_recurrence(r));
  // sm90_wgmma_c32's recurrence: 12 warps at __maxnreg__(128) (the producer
  // warpgroup hands its registers to the MMA warpgroups with setmaxnreg):
  // 3 x 4,096 + 2 x 2,048 = 16,384 per quadrant
  r.recurrence = {384, 128, 152'640};
  CHECK(prepare_fits_beside_recurrence(r));
  r.recurrence.registers_per_thread = 136;
  CHECK_FALSE(prepare_fits_beside_recurrence(r));
  r.recurrence = {256, 168, 180'000}; // 180,000 + 54,656 + 2 x 1,024 > 233,472
  CHECK_FALSE(prepare_fits_beside_recurrence(r));
}

TEST_CASE("prepare overlap: the lead of the throughput model", "[runtime][overlap]") {
  // H96: 36 free SMs at 0.313 chunks/us each (no CTA fits beside a recurrence
  // CTA): 96 (256 - lead) / 11.27 <= 256 x 1.39  ->  lead >= 214.2
  OverlapRequest r = h200(1, 96, 256);
  const OverlapDecision d = decide_prepare_overlap(k_model, r);
  REQUIRE(d.overlap);
  CHECK(d.lead_chunks == static_cast<std::int64_t>(std::ceil(256 * (1.0 - 1.39 * 0.313 * 36 / 96))));
  CHECK(d.lead_chunks == 215);
  CHECK(d.chunk_extent == 256);
  CHECK_THAT(d.reason, Contains("215 of 256 chunks"));
  // with a prepare CTA beside each recurrence CTA the rate grows, the lead shrinks
  r.recurrence.threads = 256;
  CHECK(modelled_lead_chunks(k_model, r) ==
        static_cast<std::int64_t>(std::ceil(256 * (1.0 - 1.39 * 0.313 * (36 + 0.4 * 96) / 96))));
  CHECK(modelled_lead_chunks(k_model, r) < 215);
  // few pairs: the prepare outruns the recurrence from the first chunk on
  const OverlapDecision few = decide_prepare_overlap(k_model, h200(1, 16, 1024));
  REQUIRE(few.overlap);
  CHECK(few.lead_chunks == k_model.min_lead_chunks);
}

TEST_CASE("prepare overlap: refused where it could deadlock or has nothing to overlap", "[runtime][overlap]") {
  CHECK_THAT(decide_prepare_overlap(k_model, h200(1, 132, 256)).reason,
             Contains("132 recurrence CTAs leave none of the 132 SMs"));
  CHECK_THAT(decide_prepare_overlap(k_model, h200(2, 96, 256)).reason, Contains("192 recurrence CTAs"));
  OverlapRequest small = h200(1, 8, 64);
  small.recurrence.smem_bytes = 100'000; // two per SM would fit: one per SM is not guaranteed
  CHECK_THAT(decide_prepare_overlap(k_model, small).reason, Contains("two recurrence CTAs fit on one SM"));
  OverlapRequest off = h200(1, 8, 64);
  off.allowed = false;
  CHECK_FALSE(decide_prepare_overlap(k_model, off).overlap);
  OverlapRequest long_grid = h200(1, 8, 70'000);
  CHECK_THAT(decide_prepare_overlap(k_model, long_grid).reason, Contains("65,535"));
  // the lead covers every chunk: nothing left to overlap
  CHECK_THAT(decide_prepare_overlap(k_model, h200(1, 16, 2)).reason, Contains("covers every chunk"));
  // small: H8 x 2048 saves (64 - 2) x 8 / (0.313 x 132) = 12 us, less than the 20 us asked
  const OverlapDecision small_call = decide_prepare_overlap(k_model, h200(1, 8, 64));
  CHECK_FALSE(small_call.overlap);
  CHECK_THAT(small_call.reason, Contains("12.0 us of prepare off the critical path"));
  CHECK(decide_prepare_overlap(k_model, h200(1, 16, 128)).overlap);
}

namespace {

// sm90_wgmma_c32_split on an H200: a persistent recurrence over every pair,
// its prepare kernel 256 threads x 64 registers in 42,560 B (four per SM, by
// registers), the schedule's model (t 0.98 us, rho 0.49, lead 1).
OverlapRequest h200_split(std::int64_t sequences, std::int64_t heads, std::int64_t chunks) {
  OverlapRequest r = h200(sequences, heads, chunks);
  r.prepare = {256, 64, 42'560};
  r.recurrence = {384, 128, 230'408};
  r.persistent = true;
  return r;
}

const PrepareOverlapModel k_split_model{0.98, 0.49, 0.4, 1, 20.0};

} // namespace

TEST_CASE("prepare split: recurrence CTAs by the model, prepare CTAs by what the other SMs hold",
          "[runtime][overlap]") {
  // R = round(132 x 0.98 x 0.49 / (1 + 0.98 x 0.49)) = round(42.8)
  CHECK(modelled_streams(k_split_model, 132) == 43);
  CHECK(modelled_streams(PrepareOverlapModel{100.0, 100.0, 0.4, 1, 20.0}, 132) == 131); // at most S - 1
  CHECK(modelled_streams(PrepareOverlapModel{0.01, 0.01, 0.4, 1, 20.0}, 132) == 1);     // at least 1
  OverlapRequest r = h200_split(8, 96, 32); // h96_uniform_8x1024
  // registers bind: 4 x 8 warps x 2,048 = 65,536 (shared memory would hold 5, threads 8)
  CHECK(prepare_ctas_per_sm(r) == 4);
  const OverlapDecision d = decide_prepare_overlap(k_split_model, r);
  REQUIRE(d.overlap);
  CHECK(d.streams == 43);
  CHECK(d.prepare_ctas == 43 * (4 * (132 - 43) / 43)); // K = 8: 344 CTAs on the 89 other SMs' 356 places
  CHECK(d.prepare_ctas == 344);
  CHECK(d.lead_chunks == 0); // no leading prepare: the flags are zeroed
  CHECK_THAT(d.reason, Contains("split, the recurrence on 43 of 132 SMs"));
  CHECK_THAT(d.reason, Contains("344 prepare CTAs (8 per recurrence CTA)"));
  // a given R (KDAJIT_PREPARE_STREAMS) replaces the model's and is named
  r.streams = 50;
  const OverlapDecision given = decide_prepare_overlap(k_split_model, r);
  REQUIRE(given.overlap);
  CHECK(given.streams == 50);
  CHECK(given.prepare_ctas == 50 * (4 * 82 / 50));
  CHECK_THAT(given.reason, Contains("KDAJIT_PREPARE_STREAMS"));
  // fewer items than the model's R: one CTA per item
  const OverlapDecision few = decide_prepare_overlap(k_split_model, h200_split(1, 20, 80));
  REQUIRE(few.overlap);
  CHECK(few.streams == 20);
  CHECK(few.prepare_ctas == 20 * (4 * 112 / 20));
}

TEST_CASE("prepare split: the shipped model takes kdajit selftest's small cases too", "[runtime][overlap]") {
  const Schedule* split = find_shipped_schedule("sm90_wgmma_c32_split");
  REQUIRE(split != nullptr);
  REQUIRE(split->prepare_overlap);
  const PrepareOverlapModel& m = split->prepare_overlap->model;
  CHECK(m.min_saving_us == 0.0);
  CHECK(modelled_streams(m, 132) == 43);
  // selftest's first case: packed {300, 17, 0, 1000, 65} x H4, 9 chunks per
  // sequence on average: 20 items, one recurrence CTA each
  const OverlapDecision small = decide_prepare_overlap(m, h200_split(5, 4, 9));
  REQUIRE(small.overlap);
  CHECK(small.streams == 20);
  CHECK(small.prepare_ctas == 20 * (4 * 112 / 20));
  // its fixed case: 2 x 200 tokens x H3, 7 chunks each
  CHECK(decide_prepare_overlap(m, h200_split(2, 3, 7)).streams == 6);
}

TEST_CASE("prepare split: refused where it could deadlock, has nothing to walk or no room", "[runtime][overlap]") {
  OverlapRequest off = h200_split(8, 96, 32);
  off.allowed = false;
  CHECK_THAT(decide_prepare_overlap(k_split_model, off).reason, Contains("prepare_overlap = false"));
  OverlapRequest shared = h200_split(8, 96, 32);
  shared.recurrence.smem_bytes = 100'000;
  CHECK_THAT(decide_prepare_overlap(k_split_model, shared).reason, Contains("two recurrence CTAs fit on one SM"));
  // no chunks at all
  CHECK_THAT(decide_prepare_overlap(k_split_model, h200_split(4096, 32, 0)).reason, Contains("no chunks"));
  // items of one chunk are walked too (no lead takes them): 4,096 x 32 / (0.49 x 132)
  CHECK(decide_prepare_overlap(k_split_model, h200_split(4096, 32, 1)).overlap);
  // 3 x 8 / (0.49 x 132) = 0.4 us of prepare to take off the critical path
  CHECK_THAT(decide_prepare_overlap(k_split_model, h200_split(1, 8, 3)).reason, Contains("0.4 us of prepare"));
  OverlapRequest crowded = h200_split(8, 96, 32);
  crowded.streams = 131; // one SM left: 4 prepare CTAs for 131 recurrence CTAs
  CHECK_THAT(decide_prepare_overlap(k_split_model, crowded).reason, Contains("fewer than one per recurrence CTA"));
  // more than 65,535 sequences: the walk's grid is one-dimensional
  CHECK(decide_prepare_overlap(k_split_model, h200_split(70'000, 1, 4)).overlap);
  OverlapRequest one_sm = h200_split(8, 96, 32);
  one_sm.sm_count = 1;
  CHECK_FALSE(decide_prepare_overlap(k_split_model, one_sm).overlap);
}

TEST_CASE("stream scratch: per-thread default streams are kept apart, legacy spellings together",
          "[runtime][threads][contract]") {
  void* const context = reinterpret_cast<void*>(0x1000);
  const StreamScratchKey here = stream_scratch_key(context, CU_STREAM_PER_THREAD);
  StreamScratchKey there;
  std::thread([&] { there = stream_scratch_key(context, CU_STREAM_PER_THREAD); }).join();
  CHECK(here.thread != 0);
  CHECK(here != there); // another thread's per-thread stream is another stream
  CHECK(stream_scratch_key(context, CU_STREAM_PER_THREAD) == here);
  CHECK(stream_scratch_key(context, nullptr) == stream_scratch_key(context, CU_STREAM_LEGACY));
  CHECK(stream_scratch_key(context, nullptr).thread == 0);
  StreamScratchKey legacy_elsewhere;
  std::thread([&] { legacy_elsewhere = stream_scratch_key(context, nullptr); }).join();
  CHECK(legacy_elsewhere == stream_scratch_key(context, nullptr)); // one stream for every thread
  void* const stream = reinterpret_cast<void*>(0x5000);
  CHECK(stream_scratch_key(context, stream).stream == stream);
  CHECK(stream_scratch_key(reinterpret_cast<void*>(0x2000), stream) != stream_scratch_key(context, stream));
}
