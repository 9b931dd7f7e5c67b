#include "compiler/lower/family_recipe.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kda {

namespace {

constexpr ExtentNeed k_m_tile{0, 1, 0}; // the schedule's M tile
constexpr ExtentNeed k_stages{0, 0, 1}; // the kernel's pipeline stages

// The fused tcgen05 kernel's buffers at chunk C: C-row tiles of 128 columns,
// [C x C] blocks, the output and the solve's operands per M tile, a barrier
// per ring slot for the ring's four barriers.
std::vector<BufferNeed> tcgen05_fused_buffers(std::int64_t c) {
  std::vector<BufferNeed> b;
  for (const char* tile : {"q_raw", "ki", "v", "k_raw", "kd_anchored", "kd", "g_raw", "qd_anchored", "qd", "qd_lo",
                           "ki_lo"}) {
    b.push_back({tile, DType::bf16, {{c}, {128}}});
  }
  b.push_back({"kr_t", DType::bf16, {{128}, {c}}});
  for (const char* block : {"mqk", "lmat", "tinv"}) {
    b.push_back({block, DType::bf16, {{c}, {c}}});
  }
  b.push_back({"g_total", DType::fp32, {{128}}});
  b.push_back({"row_rnorm", DType::fp32, {{2}, {c}}});
  b.push_back({"beta", DType::fp32, {{c}}});
  b.push_back({"inverse_scratch", DType::fp32, {{c}, {c}}});
  b.push_back({"out", DType::bf16, {{2}, {c}, k_m_tile}});
  b.push_back({"delta_t", DType::bf16, {{2}, k_m_tile, {c}}});
  b.push_back({"u_t", DType::bf16, {{2}, k_m_tile, {c}}});
  for (const char* ring : {"slot_ready", "slot_free", "tile_loaded", "v_loaded"}) {
    b.push_back({ring, DType::u64, {k_stages}});
  }
  for (const char* barrier : {"snapshot_ready", "projected", "delta_ready", "solved", "u_ready", "updated",
                              "o_drained"}) {
    b.push_back({barrier, DType::u64, {{1}}});
  }
  b.push_back({"tmem_base", DType::u32, {{1}}});
  return b;
}

// The chunk-16 prepare kernel's buffers (common/prepare_chunk), rows padded
// to a pitch of 136, plus a family's own.
std::vector<BufferNeed> prepare_c16_buffers(std::vector<BufferNeed> more) {
  std::vector<BufferNeed> b;
  for (const char* tile : {"q_raw", "k_raw", "g_raw", "kd", "qd", "ki", "kd_lo", "qd_lo", "ki_lo"}) {
    b.push_back({tile, DType::bf16, {{16}, {136}}});
  }
  b.push_back({"lmat", DType::fp32, {{16}, {16}}});
  b.push_back({"rnorm", DType::fp32, {{2}, {16}}});
  b.push_back({"beta", DType::fp32, {{16}}});
  b.insert(b.end(), more.begin(), more.end());
  return b;
}

// The wgmma recurrence (chunk 16 or 32): the record ring, V and the output
// tiles, and the checkpoint tile with its two mbarriers (declared only_with
// checkpoints); it waits for the prepare kernel, so it may be launched early.
// The record's size is the workspace record's (check_record_image).
KernelRecipe wgmma_recurrence(std::int64_t c) {
  return {KernelRole::recurrence,
          "wgmma/recurrence",
          "kda::frag::recurrence",
          {{"record", DType::bf16, {}},
           {"v", DType::bf16, {{c}, {136}}},
           {"out", DType::bf16, {{2}, {c}, {136}}},
           {"full", DType::u64, {k_stages}},
           {"empty", DType::u64, {k_stages}},
           {"out_full", DType::u64, {{2}}},
           {"out_empty", DType::u64, {{2}}},
           {"checkpoint", DType::bf16, {{0, 1}, {128}}},
           {"checkpoint_full", DType::u64, {{1}}},
           {"checkpoint_empty", DType::u64, {{1}}}},
          {"mma", "producer"},
          0,
          true};
}

// The fused tcgen05 kernel at chunk C (tcgen05/fused_*): the MMA shapes, the
// two operand layouts and the TMEM map follow from C.
FamilyRecipe tcgen05_fused_recipe(const std::string& name, int c, std::vector<int> m_tiles) {
  FamilyRecipe r;
  r.name = name;
  r.family = Family::tcgen05;
  r.decomposition = Decomposition::fused;
  r.chunk_size = c;
  r.common_fragments = {"common/prologue",      "common/sequences",      "common/async_copy",     "tcgen05/ops",
                        "tcgen05/fused_common", "tcgen05/fused_prepare", "tcgen05/fused_consumer"};
  r.kernels = {{KernelRole::fused,
                "tcgen05/fused_kernel",
                "kda::frag::fused_prefill",
                tcgen05_fused_buffers(c),
                {"state", "epilogue", "load", "mma", "producer"}}};
  r.chunk_offsets = {KernelRole::sequence_table, "common/sequences", "kda::compute_chunk_offsets", {}, {}, 256};
  r.inverse_block = 8; // 8 x 8 diagonal blocks, merged by doubling up to C
  r.m_tiles = std::move(m_tiles);
  r.umma = FamilyRecipe::Umma{
      // S [Kd|Qd]^T per half; Delta^T T^T; U^T [Kr|Mqk^T] on the [S|O^T] accumulator
      {{"PROJECT", c}, {"SOLVE", c}, {"UPDATE", 128 + c}},
      // [C x 128] tiles as TMA writes them (two 64-column halves, 128-byte swizzle, 8-row
      // atoms 1,024 B apart); [rows x C] operands as core matrices without swizzle
      {{"TILE", 16, 1024, true}, {"NARROW", 128, c / 8 * 128, false}},
      // [S | O^T], P^T then U^T, the bf16 snapshot of S
      {{"STATE", 128}, {"OUT", c}, {"WORK", c}, {"SNAPSHOT", 64}}};
  r.tile_tensor_map_cols = 64;
  r.features = {true, true, true}; // pools and checkpoints in consume_state, seq_order in recurrence_pair
  r.proxy_ops_fragment = "tcgen05/proxy_ops";
  return r;
}

} // namespace

const std::vector<FamilyRecipe>& all_family_recipes() {
  static const std::vector<FamilyRecipe> k_recipes = {
      {
          "warp_mma_decomposed_c16",
          Family::warp_mma,
          Decomposition::decomposed,
          16,
          {"common/prologue", "common/sequences", "warp_mma/record_rows", "common/recurrence_io", "common/prepare_ops"},
          {{KernelRole::prepare, "common/prepare_chunk", "kda::frag::prepare_chunk",
            // the row-layout record copies Kr from an SMEM tile
            prepare_c16_buffers({{"kr", DType::bf16, {{16}, {136}}}}),
            {"prepare"}},
           {KernelRole::recurrence, "warp_mma/recurrence", "kda::frag::recurrence",
            {{"kd", DType::bf16, {{16}, {136}}},
             {"qd", DType::bf16, {{16}, {136}}},
             {"kr", DType::bf16, {{16}, {136}}},
             {"v", DType::bf16, {{16}, {136}}},
             {"tinv", DType::bf16, {{16}, {24}}},
             {"mqk", DType::bf16, {{16}, {24}}},
             {"beta", DType::fp32, {{16}}},
             {"gamma", DType::fp32, {{128}}},
             {"out", DType::bf16, {{2}, {16}, {136}}}},
            {"mma"}}},
          {KernelRole::sequence_table, "common/sequences", "kda::compute_chunk_offsets", {}, {}, 256},
          {{"KD", 0, 16 * 128 * 2},
           {"QD", 0, 16 * 128 * 2},
           {"KR", 0, 16 * 128 * 2},
           {"TINV", 0, 16 * 16 * 2},
           {"MQK", 0, 16 * 16 * 2},
           {"BETA", 0, 16 * 4},
           {"GAMMA", 0, 128 * 4}},
          "",
          {},
          16,
          false,
          {},
          std::nullopt,
          "",
          MqkDiagonal::operands,
          0,
          {true, true, true}, // pools and checkpoints in recurrence_io, seq_order in recurrence_pair
      },
      {
          // The record is the SMEM image of the wgmma B operands (K-major core
          // matrices, no swizzle): KQ = [Kd; Qd] (N 32, K 128) for the
          // projections, UPD = [Kr^T T; Mqk T] (N 144, K 16) for the
          // state-and-output update with the solve folded in.
          "wgmma_decomposed_c16",
          Family::wgmma,
          Decomposition::decomposed,
          16,
          {"common/prologue", "common/sequences", "wgmma/record_core_matrices", "common/recurrence_io",
           "common/async_copy", "wgmma/async", "common/ready_flags", "common/prepare_ops", "wgmma/fold_c16"},
          {{KernelRole::prepare, "common/prepare_chunk", "kda::frag::prepare_chunk",
            // the fold's operands
            prepare_c16_buffers({{"krt", DType::bf16, {{128}, {16}}}, {"tt", DType::bf16, {{16}, {16}}}}),
            {"prepare"}},
           wgmma_recurrence(16)},
          {KernelRole::sequence_table, "common/sequences", "kda::compute_chunk_offsets", {}, {}, 256},
          {{"KQ", 0, 32 * 128 * 2, 4 * 128, 128},
           {"UPD", 0, 144 * 16 * 2, 18 * 128, 128},
           {"BETA", 0, 16 * 4},
           {"GAMMA", 0, 128 * 4}},
          "record",
          {16, 128},
          16,
          false,
          {},
          std::nullopt,
          "",
          MqkDiagonal::operands,
          0,
          {true, true, true}, // pools and checkpoints in recurrence_io, seq_order in recurrence_pair
      },
      {
          // Chunk 32 with the fixed exponent anchor: the same record image at
          // twice the rows (KQ N 64, K 128; UPD N 160, K 32); the prepare
          // kernel (8 warps) inverts blocked 16 -> 32 and folds T into UPD.
          "wgmma_decomposed_c32",
          Family::wgmma,
          Decomposition::decomposed,
          32,
          {"common/prologue", "common/sequences", "wgmma/record_core_matrices", "common/recurrence_io",
           "common/async_copy", "wgmma/async", "common/ready_flags", "common/prepare_ops"},
          {{KernelRole::prepare, "wgmma/prepare_chunk32", "kda::frag::prepare_chunk32",
            {{"q_raw", DType::bf16, {{32}, {128}}},
             {"k_raw", DType::bf16, {{32}, {128}}},
             {"g_raw", DType::bf16, {{32}, {128}}},
             {"rnorm", DType::fp32, {{2}, {32}}},
             {"beta", DType::fp32, {{32}}},
             {"gsum", DType::fp32, {{4}, {128}}},
             {"qkdot", DType::fp32, {{32}}},
             {"chunk_info", DType::i64, {{8}}},
             {"ki", DType::bf16, {{32}, {128}}},
             {"kda", DType::bf16, {{32}, {128}}},
             {"qda", DType::bf16, {{32}, {128}}},
             {"lmat", DType::fp32, {{32}, {36}}},
             {"mqk", DType::bf16, {{32}, {40}}},
             {"kr", DType::bf16, {{32}, {128}}},
             {"tmat", DType::fp32, {{32}, {36}}},
             {"tt", DType::bf16, {{32}, {40}}}},
            {"prepare"}},
           wgmma_recurrence(32)},
          {KernelRole::sequence_table, "common/sequences", "kda::compute_chunk_offsets", {}, {}, 256},
          {{"KQ", 0, 64 * 128 * 2, 8 * 128, 128},
           {"UPD", 0, 160 * 32 * 2, 20 * 128, 128},
           {"BETA", 0, 32 * 4},
           {"GAMMA", 0, 128 * 4}},
          "record",
          {32, 128},
          16, // T11, T22 by forward substitution, merged 16 -> 32
          true,
          {},
          std::nullopt,
          "",
          MqkDiagonal::raw_rows, // Qda and Ki are bf16: the diagonal from the raw rows
          0,
          {true, true, true},
      },
      // The fused design of seed note 000 (one kernel): the load warp and five
      // producer groups fill the ring, the state, MMA and epilogue roles
      // consume it in order with the fp32 state in TMEM. M128 and M64 at
      // chunk 32 (anchored), N16 at chunk 16. On the sm_90a proxy target
      // tcgen05/proxy_ops replaces tcgen05/ops; nothing else changes.
      tcgen05_fused_recipe("tcgen05_fused_c32", 32, {128, 64}),
      tcgen05_fused_recipe("tcgen05_fused_c16", 16, {128}),
  };
  return k_recipes;
}

const FamilyRecipe& find_family_recipe(const Schedule& s) {
  std::string available;
  for (const FamilyRecipe& r : all_family_recipes()) {
    const bool m_tile_ok =
        r.m_tiles.empty() || std::find(r.m_tiles.begin(), r.m_tiles.end(), s.m_tile) != r.m_tiles.end();
    if (r.family == s.family && r.decomposition == s.decomposition && r.chunk_size == s.chunk_size && m_tile_ok) {
      return r;
    }
    available += fmt::format("{}{} {} chunk {}{}", available.empty() ? "" : ", ", to_string(r.family),
                             to_string(r.decomposition), r.chunk_size,
                             r.m_tiles.empty() ? "" : fmt::format(" m_tile {}", fmt::join(r.m_tiles, "/")));
  }
  throw ScheduleError(s.source, {{"/family", fmt::format("no code generator yet for a {} {} design with chunk {} and "
                                                         "m_tile {} (available: {})",
                                                         to_string(s.family), to_string(s.decomposition),
                                                         s.chunk_size, s.m_tile, available)}});
}

} // namespace kda
