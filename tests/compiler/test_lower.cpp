#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace kda;
using Catch::Contains;

using test::lower_shipped;

TEST_CASE("lowering portable_c16 gives prepare and recurrence entries from the plan", "[compiler][lower]") {
  const KernelPlan plan = lower_shipped("portable_c16", "sm_90", LayoutKind::fixed);
  REQUIRE(plan.entries.size() == 2);
  const EntryPlan& prepare = plan.entries[0];
  const EntryPlan& recurrence = plan.entries[1];
  CHECK(prepare.entry_name == "kda_prefill_portable_c16_prepare");
  CHECK(prepare.launch.grid == GridRule::chunks_by_heads);
  CHECK(prepare.launch.threads == 128);
  CHECK(recurrence.entry_name == "kda_prefill_portable_c16_recurrence");
  CHECK(recurrence.launch.grid == GridRule::sequences_by_heads);
  CHECK(recurrence.pipeline.stages == 3);
  const ValidatedSchedule v = validate(test::shipped_schedule("portable_c16"), test::target_named("sm_90"));
  CHECK(recurrence.launch.dynamic_smem == v.kernels()[1].smem.total_bytes);
  CHECK(recurrence.stage_bytes == v.kernels()[1].smem.stage_bytes);
  // SMEM symbols are the alias plan's offsets; shared buffers follow the ring.
  for (const SmemSymbol& s : recurrence.smem) {
    const PlacedBuffer* b = v.kernels()[1].smem.find(s.buffer);
    REQUIRE(b != nullptr);
    CHECK(s.offset == (b->region == Region::stage ? b->offset : v.kernels()[1].smem.shared_offset + b->offset));
  }
  CHECK(plan.workspace.record_bytes == 3 * 4096 + 2 * 512 + 64 + 512);
  CHECK(plan.abi.find("q")->offset == 0);
  CHECK(plan.abi.size % 8 == 0);
}

TEST_CASE("packed input adds the chunk-offsets entry first", "[compiler][lower]") {
  const KernelPlan plan = lower_shipped("portable_c16", "sm_120a", LayoutKind::packed, StatePrecision::fp32);
  REQUIRE(plan.entries.size() == 3);
  CHECK(plan.entries[0].entry_name == "kda_prefill_portable_c16_chunk_offsets");
  CHECK(plan.entries[0].role == KernelRole::sequence_table); // the launcher finds it by role, not by name
  CHECK(plan.entries[0].launch.grid == GridRule::single_block);
  CHECK(plan.shape.canonical() == "d128.in_bf16.state_fp32.packed");
}

TEST_CASE("a plan whose buffers do not match the fragments cannot be lowered", "[compiler][lower]") {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["kernels"][1]["smem"]["buffers"].push_back(
      {{"name", "spare"}, {"shape", {64}}, {"dtype", "fp32"}, {"region", "stage"}, {"lifetime", {"load", "store"}}});
  auto& prepare_buffers = doc["kernels"][0]["smem"]["buffers"];
  for (std::size_t i = 0; i < prepare_buffers.size(); ++i) {
    if (prepare_buffers[i]["name"] == "kd") {
      prepare_buffers.erase(i);
      break;
    }
  }
  const Schedule s = parse_schedule(doc, "edited.json");
  try {
    lower(validate(s, test::target_named("sm_90")), ShapeKey{});
    FAIL("lowering should fail");
  } catch (const ScheduleError& e) {
    std::string all;
    for (const Diagnostic& d : e.diagnostics()) {
      all += d.to_string() + "\n";
    }
    CHECK_THAT(all, Contains("fragment common/prepare_chunk needs a buffer 'kd' that kernel 'prepare' does not declare"));
    CHECK_THAT(all, Contains("/kernels/1/smem/buffers/9: buffer 'spare' is not used by fragment warp_mma/recurrence"));
  }
}

TEST_CASE("designs without a generator are refused with the reason", "[compiler][lower]") {
  nlohmann::json doc = test::shipped_schedule_json("sm120_c32");
  doc["m_tile"] = 64; // valid as a plan; the fused warp_mma fragments implement M 128 only
  const Schedule s = parse_schedule(doc, "edited.json");
  CHECK_THROWS_WITH(lower(validate(s, test::target_named("sm_120a")), ShapeKey{}),
                    Contains("no code generator yet for a warp_mma fused design with chunk 32 and m_tile 64") &&
                        Contains("warp_mma fused chunk 32 m_tile 128") && Contains("tcgen05 fused chunk 32 m_tile 128/64"));
}

TEST_CASE("the fused M64 design: two CTAs per pair, M 64 MMAs, half the consumer operands", "[compiler][lower][tcgen05]") {
  const KernelPlan plan = lower_shipped("sm100_m64_c32", "sm_100f", LayoutKind::fixed);
  REQUIRE(plan.entries.size() == 1);
  CHECK(plan.tiles.m_tile == 64);
  CHECK(plan.entries[0].launch.grid == GridRule::sequences_by_heads); // y = heads x 2 row blocks
  CHECK(plan.entries[0].launch.threads == 960);
  REQUIRE(plan.umma.has_value());
  for (const UmmaShape& s : plan.umma->shapes) {
    CHECK(s.m == 64);
    CHECK(((s.idesc >> 24) & 31u) == 64u >> 4);
  }
  const EntryPlan& e = plan.entries[0];
  for (const SmemSymbol& s : e.smem) {
    if (s.buffer == "delta_t" || s.buffer == "out") {
      CHECK(s.bytes == 2 * 64 * 32 * 2);
    }
  }
}

TEST_CASE("the fused N16 design is the same kernel at chunk 16 without the anchor", "[compiler][lower][tcgen05]") {
  const KernelPlan plan = lower_shipped("sm100_n16_c16", "sm_103a", LayoutKind::fixed);
  REQUIRE(plan.entries.size() == 1);
  CHECK(plan.entries[0].fragment == "tcgen05/fused_kernel");
  CHECK(plan.entries[0].pipeline.stages == 10);
  CHECK(plan.entries[0].pipeline.producer_groups == 5); // group p fills slots p and p + 5
  CHECK(plan.numerics.anchor_rows == 0);
  CHECK(plan.numerics.inverse_block == 8);
  REQUIRE(plan.umma.has_value());
  CHECK((plan.umma->shapes[2].name == "UPDATE" && plan.umma->shapes[2].n == 144)); // one K=16 MMA
  CHECK(plan.umma->operands[1].sbo == 256);                                        // [rows x 16] operands
  CHECK(plan.umma->tmem[3].column == 160);                                         // 128 + 16 + 16
  CHECK(plan.umma->tmem_columns == 256);
}

TEST_CASE("the fused M128 design lowers to one kernel with its tcgen05 encodings and TMEM map", "[compiler][lower][tcgen05]") {
  const KernelPlan plan = lower_shipped("sm100_m128_c32", "sm_100a", LayoutKind::fixed);
  REQUIRE(plan.entries.size() == 1);
  const EntryPlan& main = plan.entries[0];
  CHECK(main.entry_name == "kda_prefill_sm100_m128_c32_main");
  CHECK(main.launch.threads == 960);
  CHECK(main.launch.grid == GridRule::sequences_by_heads);
  const ValidatedSchedule v = validate(test::shipped_schedule("sm100_m128_c32"), test::target_named("sm_100a"));
  CHECK(main.launch.dynamic_smem == v.kernels()[0].smem.total_bytes); // the plan's SMEM, not the target's maximum
  CHECK(main.pipeline.stages == 5);
  CHECK(main.pipeline.producer_groups == 5);
  CHECK(plan.workspace.record_bytes == 0); // fused: nothing leaves the SM between prepare and recurrence
  CHECK(plan.workspace.cta_scratch_bytes == 0);
  CHECK(plan.numerics.inverse_block == 8);
  CHECK(plan.numerics.anchor_rows == 16);
  REQUIRE(plan.umma.has_value());
  const UmmaPlan& u = *plan.umma;
  CHECK_FALSE(u.proxy);
  CHECK(u.tmem_columns == 256);
  // [S | O^T] side by side (one accumulator, N 160), the work block, the bf16 snapshot
  REQUIRE(u.tmem.size() == 4);
  CHECK((u.tmem[0].name == "STATE" && u.tmem[0].column == 0 && u.tmem[0].columns == 128));
  CHECK((u.tmem[1].name == "OUT" && u.tmem[1].column == 128));
  CHECK((u.tmem[2].name == "WORK" && u.tmem[2].column == 160));
  CHECK((u.tmem[3].name == "SNAPSHOT" && u.tmem[3].column == 192 && u.tmem[3].columns == 64));
  REQUIRE(u.shapes.size() == 3);
  CHECK((u.shapes[2].name == "UPDATE" && u.shapes[2].m == 128 && u.shapes[2].n == 160));
  // N >> 3 in bits 17-22, M >> 4 in bits 24-28, bf16 A/B (bits 7-9, 10-12 = 1), f32 D (bits 4-5 = 1)
  CHECK(u.shapes[2].idesc == ((160u >> 3) << 17 | (128u >> 4) << 24 | 1u << 10 | 1u << 7 | 1u << 4));
  REQUIRE(u.operands.size() == 2);
  // [C][128] tiles as TMA writes them: 128-byte swizzle (tcgen05 code 2), 8-row atoms 1,024 B apart
  CHECK((u.operands[0].name == "TILE" && u.operands[0].sbo == 1024 && u.operands[0].swizzle128));
  CHECK(u.operands[0].desc == (2ull << 61 | 1ull << 46 | (1024ull >> 4) << 32 | (16ull >> 4) << 16));
  CHECK((u.operands[1].name == "NARROW" && u.operands[1].sbo == 512 && !u.operands[1].swizzle128));
  CHECK(u.operands[1].desc == (1ull << 46 | (512ull >> 4) << 32 | (128ull >> 4) << 16));
  // whole chunks by TMA (a plan feature of its own, not a tensor-core one):
  // four tensor maps after the other fields, 64-byte aligned
  REQUIRE(plan.tile_tensor_maps);
  CHECK(plan.tile_tensor_maps->box_cols == 64);
  CHECK(plan.tile_tensor_maps->box_rows == 32);
  CHECK(plan.tile_tensor_maps->tensors == std::vector<std::string>{"q", "k", "g", "v"});
  CHECK(plan.abi.version == 5);
  CHECK(plan.abi.alignment == 64);
  for (const char* name : {"tma_q", "tma_k", "tma_g", "tma_v"}) {
    const ArgField* f = plan.abi.find(name);
    REQUIRE(f != nullptr);
    CHECK(f->type == ArgType::tensor_map);
    CHECK(f->size == 128);
    CHECK(f->offset % 64 == 0);
  }
  CHECK(plan.abi.size % 64 == 0);
  // the other families load with cp.async: no maps
  const KernelPlan wgmma = lower_shipped("sm90_wgmma_c32", "sm_90a", LayoutKind::fixed);
  CHECK(!wgmma.tile_tensor_maps);
  CHECK(wgmma.abi.find("tma_q") == nullptr);
  CHECK(std::find(plan.fragments.begin(), plan.fragments.end(), "tcgen05/ops") != plan.fragments.end());
}

TEST_CASE("the sm_90a proxy lowers the same plan with only the TMEM/MMA fragment replaced", "[compiler][lower][tcgen05]") {
  const KernelPlan blackwell = lower_shipped("sm100_m128_c32", "sm_100a", LayoutKind::packed, StatePrecision::fp32);
  const KernelPlan proxy = lower_shipped("sm100_m128_c32", "sm_90a_proxy", LayoutKind::packed, StatePrecision::fp32);
  CHECK(proxy.target.arch() == "sm_90a");
  REQUIRE(proxy.umma.has_value());
  CHECK(proxy.umma->proxy);
  CHECK(proxy.umma->tmem_image_bytes == 128 * 256 * 4);
  CHECK(proxy.workspace.cta_scratch_bytes == 128 * 256 * 4);
  REQUIRE(proxy.fragments.size() == blackwell.fragments.size());
  int differing = 0;
  for (std::size_t i = 0; i < proxy.fragments.size(); ++i) {
    if (proxy.fragments[i] != blackwell.fragments[i]) {
      ++differing;
      CHECK(blackwell.fragments[i] == "tcgen05/ops");
      CHECK(proxy.fragments[i] == "tcgen05/proxy_ops");
    }
  }
  CHECK(differing == 1);
  REQUIRE(proxy.entries.size() == blackwell.entries.size());
  for (std::size_t e = 0; e < proxy.entries.size(); ++e) {
    CHECK(proxy.entries[e].launch.dynamic_smem == blackwell.entries[e].launch.dynamic_smem);
    CHECK(proxy.entries[e].launch.threads == blackwell.entries[e].launch.threads);
    REQUIRE(proxy.entries[e].smem.size() == blackwell.entries[e].smem.size());
    for (std::size_t b = 0; b < proxy.entries[e].smem.size(); ++b) {
      CHECK(proxy.entries[e].smem[b].offset == blackwell.entries[e].smem[b].offset);
    }
  }
  for (std::size_t i = 0; i < proxy.umma->shapes.size(); ++i) {
    CHECK(proxy.umma->shapes[i].idesc == blackwell.umma->shapes[i].idesc);
  }
  // the proxy is not a target a schedule lists, and no other family lowers there
  CHECK_THROWS_WITH(lower_shipped("sm90_wgmma_c32", "sm_90a_proxy", LayoutKind::fixed),
                    Contains("the schedule does not list target sm_90a_proxy"));
}

// Issue 5, item 6: the arithmetic behind choices that only Blackwell hardware
// could confirm, checked on every generated tcgen05 plan.
TEST_CASE("tcgen05 plans: TMEM map, operand alignment and barrier transaction counts add up", "[compiler][lower][tcgen05]") {
  for (const char* name : {"sm100_m128_c32", "sm100_m64_c32", "sm100_n16_c16"}) {
    INFO(name);
    const KernelPlan plan = lower_shipped(name, "sm_100a", LayoutKind::fixed);
    REQUIRE(plan.umma.has_value());
    const UmmaPlan& u = *plan.umma;
    const int c = plan.tiles.chunk_size;
    auto region = [&](const std::string& r) {
      for (const TmemRegion& t : u.tmem) {
        if (t.name == r) {
          return t;
        }
      }
      FAIL("no TMEM region " << r);
      return TmemRegion{};
    };
    auto shape = [&](const std::string& s) {
      for (const UmmaShape& x : u.shapes) {
        if (x.name == s) {
          return x;
        }
      }
      FAIL("no MMA shape " << s);
      return UmmaShape{};
    };
    // [S | O^T] is one accumulator: the update's N columns from STATE cover the
    // state (128 key columns) and O^T (C tokens) and stop before the work block
    CHECK(region("OUT").column == region("STATE").column + 128);
    CHECK(region("STATE").column + shape("UPDATE").n == region("WORK").column);
    CHECK(region("WORK").columns == shape("SOLVE").n);   // P^T, then U^T: C columns
    CHECK(region("OUT").columns == shape("PROJECT").n);  // O0^T
    // the bf16 snapshot: 128 values per lane, two per 32-bit column, K = 16 (8 columns) per projection step
    CHECK(region("SNAPSHOT").columns * 2 == 128);
    CHECK((128 / 16) * 8 == region("SNAPSHOT").columns);
    int end = 0;
    for (const TmemRegion& t : u.tmem) {
      CHECK(t.column == end); // disjoint and in order
      end += t.columns;
    }
    CHECK(end <= u.tmem_columns);
    CHECK(u.tmem_columns <= 512);
    // the 128-byte swizzle follows the row index only on 1,024-byte aligned halves
    const EntryPlan& e = plan.entries.back();
    CHECK(e.stage_bytes % 1024 == 0);
    CHECK((c * 128) % 1024 == 0);
    for (const SmemSymbol& s : e.smem) {
      if (s.buffer == "q_raw" || s.buffer == "k_raw" || s.buffer == "g_raw" || s.buffer == "v") {
        CHECK(s.offset % 1024 == 0);
        CHECK(s.bytes == c * 128 * 2); // two 64-column boxes of C rows x 128 B
      }
    }
    // tile_loaded expects q, k, g: 3 x 2 boxes of C x 128 B, far below the mbarrier's 2^20 - 1 transaction bytes
    CHECK(3 * 2 * c * 128 < (1 << 20) - 1);
    // one producer group per ring slot or per several: group p fills slots p, p + G, ...
    CHECK(e.pipeline.stages % e.pipeline.producer_groups == 0);
    // 960 threads at most 64 registers each fit the 64 K register file
    CHECK(e.launch.threads * 64 <= 65536);
  }
}
