// The wgmma family (sm_90a): its workspace record is the SMEM image of the
// recurrence's B operands, K-major core matrices without swizzle (PTX ISA
// 9.7.15.5.1 "Shared Memory Matrix Layout"), copied whole into a ring slot;
// the descriptors' constant fields come from the plan.
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/encodings/smem_descriptor.hpp"
#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <set>

using namespace kda;
using Catch::Contains;

namespace {

const WorkspaceField& field(const KernelPlan& plan, const std::string& name) {
  for (const WorkspaceField& f : plan.workspace.fields) {
    if (f.name == name) {
      return f;
    }
  }
  FAIL("no workspace field " << name);
  throw;
}

// The byte offset the record fragment uses for element (n, k).
std::int64_t core_matrix_at(const WorkspaceField& f, int n, int k) {
  return (k / 8) * f.core_lbo + (n / 8) * f.core_sbo + 16 * (n % 8) + 2 * (k % 8);
}

} // namespace

TEST_CASE("wgmma record: operand fields tile their bytes exactly with the planned LBO and SBO", "[compiler][lower][wgmma]") {
  struct Operand {
    const char* name;
    int n;
    int k;
  };
  struct Design {
    const char* schedule;
    int chunk;
    std::int64_t upd_offset, beta_offset, gamma_offset, record_bytes;
  };
  // KQ = [Kd; Qd] (N 2C, K 128), UPD = [Kr^T T; Mqk T] (N 128 + C, K C), beta [C], gamma [128] fp32
  for (const Design& d : {Design{"sm90_wgmma_c16", 16, 8192, 12800, 12864, 13376},
                          Design{"sm90_wgmma_c32", 32, 16384, 26624, 26752, 27264}}) {
    INFO(d.schedule);
    const KernelPlan plan = test::lower_shipped(d.schedule, "sm_90a", LayoutKind::fixed);
    for (const Operand& op : {Operand{"KQ", 2 * d.chunk, 128}, Operand{"UPD", 128 + d.chunk, d.chunk}}) {
      INFO(op.name);
      const WorkspaceField& f = field(plan, op.name);
      CHECK(f.bytes == 2 * op.n * op.k);
      CHECK(f.core_sbo == 128);              // 8 rows x 16 bytes: N-adjacent core matrices are contiguous
      CHECK(f.core_lbo == (op.n / 8) * 128); // K-adjacent ones follow all N groups
      std::set<std::int64_t> seen;
      for (int n = 0; n < op.n; ++n) {
        for (int k = 0; k < op.k; ++k) {
          const std::int64_t at = core_matrix_at(f, n, k);
          CHECK(at >= 0);
          CHECK(at + 2 <= f.bytes);
          seen.insert(at);
        }
      }
      CHECK(static_cast<std::int64_t>(seen.size()) == op.n * op.k); // a bijection onto the field
      // one wgmma K step (16 keys) spans two core matrices along K: LBO apart
      CHECK(core_matrix_at(f, 0, 8) - core_matrix_at(f, 0, 0) == f.core_lbo);
      CHECK(core_matrix_at(f, 8, 0) - core_matrix_at(f, 0, 0) == f.core_sbo);
    }
    CHECK(field(plan, "KQ").offset == 0);
    CHECK(field(plan, "UPD").offset == d.upd_offset);
    CHECK(field(plan, "BETA").offset == d.beta_offset);
    CHECK(field(plan, "GAMMA").offset == d.gamma_offset);
    CHECK(plan.workspace.record_bytes == d.record_bytes);
    CHECK(plan.workspace.image_buffer == "record");
    CHECK(plan.wgmma_n == std::vector<int>{d.chunk, 128});
  }
}

TEST_CASE("wgmma chunk 32: anchored, 8 prepare warps, m64n32k16 wrappers under the shared overload name",
          "[compiler][emit][wgmma]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c32", "sm_90a", LayoutKind::fixed);
  CHECK(plan.tiles.chunk_size == 32);
  CHECK(plan.exponent_anchor == ExponentAnchor::lower_bound);
  CHECK(plan.entries.front().launch.threads == 256);
  const std::string text = emit_cuda(plan).text;
  CHECK_THAT(text, Contains("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16"));
  CHECK_THAT(text, Contains("void wgmma_m64k16_rs(float (&d)[4][4]"));
  CHECK_THAT(text, Contains("void wgmma_m64k16_rs(float (&d)[16][4]"));
  CHECK_THAT(text, Contains("// ---- fragment wgmma/prepare_chunk32 ----"));
  CHECK(text.find("// ---- fragment wgmma/fold_c16 ----") == std::string::npos);
  // KQ: LBO 1024 (bits 16-29: 64), SBO 128 (bits 32-45: 8)
  CHECK_THAT(text, Contains("WS_KQ_DESC = 0x800400000ull"));
}

TEST_CASE("wgmma source: descriptor constants decode to the plan's layout", "[compiler][emit][wgmma]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c16", "sm_90a", LayoutKind::fixed);
  const std::string text = emit_cuda(plan).text;
  for (const char* name : {"KQ", "UPD"}) {
    const WorkspaceField& f = field(plan, name);
    SmemDescriptorFields d;
    d.leading_byte_offset = static_cast<std::uint32_t>(f.core_lbo);
    d.stride_byte_offset = static_cast<std::uint32_t>(f.core_sbo);
    const std::uint64_t encoded = encode_wgmma_descriptor(d);
    CHECK_THAT(text, Contains(fmt::format("constexpr unsigned long long WS_{}_DESC = {:#x}ull;", name, encoded)));
    const SmemDescriptorFields back = decode_wgmma_descriptor(encoded);
    CHECK(back.start_address == 0); // added on the device
    CHECK(back.leading_byte_offset == f.core_lbo);
    CHECK(back.stride_byte_offset == f.core_sbo);
    CHECK(back.swizzle == SmemSwizzle::none);
  }
  // KQ: LBO 512 (bits 16-29: 32), SBO 128 (bits 32-45: 8)
  CHECK_THAT(text, Contains("WS_KQ_DESC = 0x800200000ull"));
  CHECK_THAT(text, Contains("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16"));
  CHECK_THAT(text, Contains("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
  CHECK_THAT(text, Contains("void wgmma_m64n128k16_rs(float (&d)[16][4]"));
  CHECK_THAT(text, Contains("// ---- fragment wgmma/record_core_matrices ----"));
}

TEST_CASE("wgmma: the record image buffer must hold exactly one record", "[compiler][lower][wgmma]") {
  nlohmann::json doc = test::shipped_schedule_json("sm90_wgmma_c16");
  auto& buffers = doc["kernels"][1]["smem"]["buffers"];
  REQUIRE(buffers[0]["name"] == "record");
  buffers[0]["shape"] = {6680};
  buffers[0]["region"] = "shared";
  const Schedule s = parse_schedule(doc, "edited.json");
  try {
    lower(validate(s, test::target_named("sm_90a")), ShapeKey{});
    FAIL("lowering should fail");
  } catch (const ScheduleError& e) {
    std::string all;
    for (const Diagnostic& d : e.diagnostics()) {
      all += d.to_string() + "\n";
    }
    CHECK_THAT(all, Contains("/kernels/1/smem/buffers/0/shape: buffer 'record' holds one workspace record (copied "
                             "whole by one bulk copy, or formed there by a fused kernel): it must hold exactly 13376 "
                             "bytes (the generator's record), not 13360"));
    CHECK_THAT(all, Contains("/kernels/1/smem/buffers/0/region: buffer 'record' receives a record per chunk"));
  }
}

TEST_CASE("wgmma schedules need sm_90a", "[compiler][lower][wgmma]") {
  nlohmann::json doc = test::shipped_schedule_json("sm90_wgmma_c16");
  doc["targets"] = {"sm_90"};
  const Schedule s = parse_schedule(doc, "edited.json");
  CHECK_THROWS_AS(validate(s, test::target_named("sm_90")), ScheduleError);
}

TEST_CASE("wgmma: the recurrence needs exactly the mma and producer warp roles", "[compiler][lower][wgmma]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c16", "sm_90a", LayoutKind::fixed);
  const EntryPlan& recurrence = plan.entries.back();
  REQUIRE(recurrence.roles.size() == 2);
  CHECK(recurrence.roles[0].name == "MMA");
  CHECK(recurrence.roles[0].warps == 8);
  CHECK(recurrence.roles[0].first_warp == 0);
  CHECK(recurrence.roles[1].name == "PRODUCER");
  CHECK(recurrence.roles[1].first_warp == 8);
  CHECK(recurrence.roles[1].warps == 4); // a warpgroup, for setmaxnreg
  CHECK(recurrence.launch.threads == 384);
  const std::string text = emit_cuda(plan).text;
  CHECK_THAT(text, Contains("constexpr int PRODUCER_FIRST_WARP = 8;"));

  nlohmann::json doc = test::shipped_schedule_json("sm90_wgmma_c16");
  doc["kernels"][1]["warp_roles"].erase(1);
  const Schedule s = parse_schedule(doc, "edited.json");
  CHECK_THROWS_WITH(lower(validate(s, test::target_named("sm_90a")), ShapeKey{}),
                    Contains("fragment wgmma/recurrence assigns work to the warp roles mma, producer; kernel "
                             "'recurrence' declares mma"));
}

namespace {

std::string problems_of_lowering(const nlohmann::json& doc, const char* target) {
  std::string all;
  try {
    lower(validate(parse_schedule(doc, "edited.json"), test::target_named(target)), ShapeKey{});
  } catch (const ScheduleError& e) {
    for (const Diagnostic& d : e.diagnostics()) {
      all += d.to_string() + "\n";
    }
  }
  return all;
}

} // namespace

TEST_CASE("prepare_overlap: the chunk-32 plan carries the model; the source publishes and waits for ready flags",
          "[compiler][lower][wgmma][overlap]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c32", "sm_90a", LayoutKind::packed);
  REQUIRE(plan.prepare_overlap);
  CHECK(plan.prepare_overlap->recurrence_us_per_chunk > 0.0);
  CHECK(plan.prepare_overlap->beside_recurrence_share > 0.0);
  CHECK(plan.prepare_overlap->beside_recurrence_share <= 1.0);
  CHECK(plan.prepare_overlap->min_lead_chunks >= 1);
  REQUIRE(plan.abi.find("ready_flags") != nullptr);
  CHECK(plan.abi.find("chunk_major")->type == ArgType::i32);
  const std::string text = emit_cuda(plan).text;
  CHECK_THAT(text, Contains("// ---- fragment common/ready_flags ----"));
  CHECK_THAT(text, Contains("st.release.gpu.global.u32"));
  CHECK_THAT(text, Contains("ld.acquire.gpu.global.u32"));
  CHECK_THAT(text, Contains("fence.proxy.async.global;"));
  CHECK_THAT(text, Contains("publish_record_ready(p, c.chunk * p.heads + h);"));
  CHECK_THAT(text, Contains("wait_record_ready(p, (seq.first_chunk + c) * p.heads + h);"));
  CHECK_THAT(text, Contains("prepare_chunk_of_block(p, h)"));
  // chunk 16 shares the recurrence (flags absent at run time) but has no overlap model
  CHECK_FALSE(test::lower_shipped("sm90_wgmma_c16", "sm_90a", LayoutKind::fixed).prepare_overlap);
}

TEST_CASE("prepare_overlap: refused where the generator cannot overlap, and checked field by field",
          "[compiler][lower][wgmma][overlap]") {
  const nlohmann::json overlap = {{"recurrence_us_per_chunk", 1.0},
                                  {"prepare_chunks_per_us_per_sm", 0.3},
                                  {"beside_recurrence_share", 0.5},
                                  {"min_lead_chunks", 1},
                                  {"min_saving_us", 20}};
  nlohmann::json c16 = test::shipped_schedule_json("sm90_wgmma_c16");
  c16["prepare_overlap"] = overlap;
  CHECK_THAT(problems_of_lowering(c16, "sm_90a"),
             Contains("/prepare_overlap: the wgmma_decomposed_c16 generator cannot run its prepare kernel beside the "
                      "recurrence"));

  nlohmann::json bad = test::shipped_schedule_json("sm90_wgmma_c32");
  bad["prepare_overlap"]["beside_recurrence_share"] = 1.5;
  bad["prepare_overlap"]["recurrence_us_per_chunk"] = -1.0;
  bad["prepare_overlap"]["min_lead_chunks"] = 0;
  const std::string problems = problems_of_lowering(bad, "sm_90a");
  CHECK_THAT(problems, Contains("/prepare_overlap/beside_recurrence_share: beside_recurrence_share is a fraction"));
  CHECK_THAT(problems, Contains("/prepare_overlap/recurrence_us_per_chunk: recurrence_us_per_chunk must be a positive "
                                "number, not -1"));
  CHECK_THAT(problems, Contains("/prepare_overlap/min_lead_chunks: min_lead_chunks must be at least 1"));

  nlohmann::json unknown = test::shipped_schedule_json("sm90_wgmma_c32");
  unknown["prepare_overlap"]["lead"] = 3;
  CHECK_THROWS_AS(parse_schedule(unknown, "edited.json"), ScheduleError);

  nlohmann::json fused = test::shipped_schedule_json("sm100_m128_c32");
  fused["prepare_overlap"] = overlap;
  CHECK_THAT(problems_of_lowering(fused, "sm_100a"), Contains("/prepare_overlap: only a decomposed design"));
}

TEST_CASE("wgmma chunk 32: the recurrence's producer warpgroup hands registers to the MMA warpgroups on an SM of its own",
          "[compiler][lower][wgmma]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c32", "sm_90a", LayoutKind::fixed);
  const EntryPlan& recurrence = plan.entries.back();
  REQUIRE(recurrence.roles.size() == 2);
  CHECK(recurrence.roles[0].registers == 168);
  CHECK(recurrence.roles[1].warps == 4);
  CHECK(recurrence.roles[1].registers == 40);
  // (8 x 168 + 4 x 40) x 32 = 48,128 registers over 384 threads: 125.3 -> 128 at entry
  CHECK(recurrence.launch.entry_registers == 128);
  CHECK(recurrence.launch.dynamic_smem == 232'448); // exclusive_sm: the target's whole SMEM per block
  const std::string text = emit_cuda(plan).text;
  CHECK_THAT(text, Contains("extern \"C\" __global__ void __maxnreg__(128) kda_prefill_sm90_wgmma_c32_recurrence("));
  CHECK_THAT(text, Contains("constexpr int MMA_REGISTERS = 168;"));
  CHECK_THAT(text, Contains("constexpr int PRODUCER_REGISTERS = 40;"));
  CHECK_THAT(text, Contains("setmaxnreg.inc.sync.aligned.u32"));
  CHECK_THAT(text, Contains("__launch_bounds__(256, 4) kda_prefill_sm90_wgmma_c32_prepare("));
  // without registers on its roles the recurrence keeps one producer warp and launch bounds
  nlohmann::json doc = test::shipped_schedule_json("sm90_wgmma_c16");
  doc["kernels"][1]["warp_roles"] = {{{"name", "mma"}, {"warps", 8}}, {{"name", "producer"}, {"warps", 1}}};
  const KernelPlan plain = lower(validate(parse_schedule(doc, "edited.json"), test::target_named("sm_90a")), ShapeKey{});
  CHECK(plain.entries.back().launch.entry_registers == 0);
  CHECK_THAT(emit_cuda(plain).text, Contains("__launch_bounds__(288) kda_prefill_sm90_wgmma_c16_recurrence("));
  CHECK_THAT(emit_cuda(plain).text, Contains("constexpr int PRODUCER_REGISTERS = 0;"));
}

TEST_CASE("numerics.mqk_diagonal must say how the generator forms Mqk's diagonal", "[compiler][lower][wgmma][numerics]") {
  const KernelPlan c32 = test::lower_shipped("sm90_wgmma_c32", "sm_90a", LayoutKind::fixed);
  CHECK(c32.numerics.mqk_diagonal_from_raw_rows);
  CHECK_THAT(emit_cuda(c32).text, Contains("constexpr int MQK_DIAGONAL_FROM_RAW_ROWS = 1;"));
  CHECK_FALSE(test::lower_shipped("sm90_wgmma_c16", "sm_90a", LayoutKind::fixed).numerics.mqk_diagonal_from_raw_rows);

  nlohmann::json c32_operands = test::shipped_schedule_json("sm90_wgmma_c32");
  c32_operands["numerics"].erase("mqk_diagonal");
  CHECK_THAT(problems_of_lowering(c32_operands, "sm_90a"),
             Contains("/numerics/mqk_diagonal: the wgmma_decomposed_c32 generator forms Mqk's diagonal from the raw q "
                      "and k rows"));
  nlohmann::json c16_raw = test::shipped_schedule_json("sm90_wgmma_c16");
  c16_raw["numerics"]["mqk_diagonal"] = "raw_rows";
  CHECK_THAT(problems_of_lowering(c16_raw, "sm_90a"),
             Contains("/numerics/mqk_diagonal: the wgmma_decomposed_c16 generator forms Mqk's diagonal from the "
                      "anchored operands"));
}

TEST_CASE("programmatic_launch: the wgmma recurrence starts as the prepare kernel ends, only where that is safe",
          "[compiler][lower][wgmma]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c32", "sm_90a", LayoutKind::packed);
  for (const EntryPlan& e : plan.entries) {
    CHECK(e.launch.programmatic == (e.kernel == "recurrence"));
  }
  const std::string text = emit_cuda(plan).text;
  CHECK_THAT(text, Contains("griddepcontrol.wait;"));             // the record producer waits for the prepare kernel
  CHECK_THAT(text, Contains("griddepcontrol.launch_dependents;")); // which lets the recurrence launch early

  nlohmann::json on_prepare = test::shipped_schedule_json("sm90_wgmma_c32");
  on_prepare["kernels"][0]["programmatic_launch"] = true;
  CHECK_THAT(problems_of_lowering(on_prepare, "sm_90a"),
             Contains("/kernels/0/programmatic_launch: only a decomposed design's recurrence kernel starts early (it "
                      "follows the call's prepare kernel); this one is 'prepare'"));

  // the portable recurrence does not wait for the prepare kernel: it may not start early
  nlohmann::json portable = test::shipped_schedule_json("portable_c16");
  portable["kernels"][1]["programmatic_launch"] = true;
  CHECK_THAT(problems_of_lowering(portable, "sm_90"),
             Contains("/kernels/1/programmatic_launch: fragment warp_mma/recurrence does not wait for the kernel "
                      "before it (wait_prior_grid), so it cannot start early"));
  CHECK_THAT(problems_of_lowering(portable, "sm_80"),
             Contains("/kernels/1/programmatic_launch: a programmatic launch (griddepcontrol) needs sm_90 or later, "
                      "not available on sm_80"));
}

TEST_CASE("wgmma persistent grid: the recurrence loops over work items, its fragment after the direct one's helpers",
          "[compiler][lower][wgmma]") {
  for (const char* name : {"sm90_wgmma_c16_persistent", "sm90_wgmma_c32_persistent"}) {
    INFO(name);
    const KernelPlan plan = test::lower_shipped(name, "sm_90a", LayoutKind::packed);
    const EntryPlan* prepare = nullptr;
    const EntryPlan* recurrence = nullptr;
    for (const EntryPlan& e : plan.entries) {
      prepare = e.role == KernelRole::prepare ? &e : prepare;
      recurrence = e.role == KernelRole::recurrence ? &e : recurrence;
    }
    REQUIRE(prepare != nullptr);
    REQUIRE(recurrence != nullptr);
    CHECK(prepare->launch.grid == GridRule::chunks_by_heads);
    CHECK(recurrence->launch.grid == GridRule::persistent_items);
    CHECK(recurrence->launch.ctas_per_sm == 1);
    CHECK(recurrence->call == "kda::frag::recurrence_persistent");
    CHECK_FALSE(plan.prepare_overlap); // the persistent grid fills the GPU: no prepare beside it
    const auto helpers = std::find(plan.fragments.begin(), plan.fragments.end(), "wgmma/recurrence");
    const auto loops = std::find(plan.fragments.begin(), plan.fragments.end(), "wgmma/recurrence_persistent");
    REQUIRE(helpers != plan.fragments.end());
    REQUIRE(loops != plan.fragments.end());
    CHECK(helpers < loops);
  }
  // the direct designs keep their grid and fragment
  const KernelPlan direct = test::lower_shipped("sm90_wgmma_c16", "sm_90a", LayoutKind::packed);
  CHECK(direct.entries.back().launch.grid == GridRule::sequences_by_heads);
  CHECK(std::count(direct.fragments.begin(), direct.fragments.end(), "wgmma/recurrence_persistent") == 0);
}

TEST_CASE("wgmma persistent grid: the generated source emits the persistent loop, the direct sources do not",
          "[compiler][emit][wgmma]") {
  const std::string persistent =
      emit_cuda(test::lower_shipped("sm90_wgmma_c16_persistent", "sm_90a", LayoutKind::fixed)).text;
  CHECK_THAT(persistent, Contains("kda::frag::recurrence_persistent(p);"));
  CHECK_THAT(persistent, Contains("cp.async.bulk.prefetch.L2.global"));
  const std::string direct = emit_cuda(test::lower_shipped("sm90_wgmma_c16", "sm_90a", LayoutKind::fixed)).text;
  CHECK_THAT(direct, !Contains("recurrence_persistent"));
}

// A fused kernel that forms records in its ring slots (wgmma/fused_persistent)
// is held to the record image like a recurrence that copies them there.
TEST_CASE("wgmma fused persistent: the record buffer must hold exactly one record", "[compiler][lower][wgmma]") {
  const KernelPlan plan = test::lower_shipped("sm90_wgmma_c16_fused", "sm_90a", LayoutKind::packed,
                                              StatePrecision::bf16, true);
  CHECK(plan.workspace.record_bytes == 13376);
  for (const EntryPlan& e : plan.entries) {
    CHECK(e.smem_bytes <= 232448); // checkpoints' tile included
  }
  nlohmann::json bad = test::shipped_schedule_json("sm90_wgmma_c16_fused");
  for (nlohmann::json& b : bad["smem"]["buffers"]) {
    if (b["name"] == "record") {
      b["shape"] = nlohmann::json::array({6680});
    }
  }
  CHECK_THAT(problems_of_lowering(bad, "sm_90a"), Contains("buffer 'record' holds one workspace record"));
}
