#include "compiler/lower/family_recipe.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kda {

namespace {

constexpr ExtentNeed k_m_tile{0, 1, 0}; // the schedule's M tile
constexpr ExtentNeed k_stages{0, 0, 1}; // the kernel's pipeline stages

// The packed layout's chunk-offsets kernel (one block of 256 threads),
// shared by every family.
KernelRecipe chunk_offsets_recipe() {
  return {.role = KernelRole::sequence_table,
          .fragment = "common/sequences",
          .call = "kda::compute_chunk_offsets",
          .threads = 256};
}

// What the load warp and the producer groups of a fused kernel address at
// chunk C (common/fused_prepare): C-row tiles of 128 columns, [C x C] blocks,
// Kr^T, the inverse's fp32 scratch, and a barrier per ring slot for the
// ring's four barriers (common/fused_ring).
std::vector<BufferNeed> fused_prepare_buffers(std::int64_t c) {
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
  for (const char* ring : {"slot_ready", "slot_free", "tile_loaded", "v_loaded"}) {
    b.push_back({ring, DType::u64, {k_stages}});
  }
  return b;
}

// The fused tcgen05 kernel's buffers at chunk C: the producers', then the
// output and the solve's operands per M tile, the consumer's barriers and
// the TMEM address.
std::vector<BufferNeed> tcgen05_fused_buffers(std::int64_t c) {
  std::vector<BufferNeed> b = fused_prepare_buffers(c);
  b.push_back({"out", DType::bf16, {{2}, {c}, k_m_tile}});
  b.push_back({"delta_t", DType::bf16, {{2}, k_m_tile, {c}}});
  b.push_back({"u_t", DType::bf16, {{2}, k_m_tile, {c}}});
  for (const char* barrier : {"snapshot_ready", "projected", "delta_ready", "solved", "u_ready", "updated",
                              "o_drained"}) {
    b.push_back({barrier, DType::u64, {{1}}});
  }
  b.push_back({"tmem_base", DType::u32, {{1}}});
  return b;
}

// The fused warp_mma kernel's buffers at chunk C: the producers', then the
// output tile the MMA warps stage O in.
std::vector<BufferNeed> warp_mma_fused_buffers(std::int64_t c) {
  std::vector<BufferNeed> b = fused_prepare_buffers(c);
  b.push_back({"out", DType::bf16, {{c}, k_m_tile}});
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
// checkpoints; the tile is the image of two 128-byte-swizzled TMA boxes of
// the M tile's rows, 64 keys each); it waits for the prepare kernel, so it may
// be launched early. The record's size is the workspace record's
// (check_record_image). On the persistent grid its fragment loops over the
// CTA's work items and calls wgmma/recurrence's helpers (a common fragment
// of that recipe).
KernelRecipe wgmma_recurrence(std::int64_t c, GridKind grid) {
  const bool persistent = grid == GridKind::persistent;
  std::vector<BufferNeed> buffers = {{"record", DType::bf16, {}},
                                     {"v", DType::bf16, {{c}, {136}}},
                                     {"out", DType::bf16, {{2}, {c}, {136}}},
                                     {"full", DType::u64, {k_stages}},
                                     {"empty", DType::u64, {k_stages}},
                                     {"out_full", DType::u64, {{2}}},
                                     {"out_empty", DType::u64, {{2}}},
                                     {"checkpoint", DType::bf16, {{2}, {0, 1}, {64}}}, // two TMA boxes of 64 keys
                                     {"checkpoint_full", DType::u64, {{1}}},
                                     {"checkpoint_empty", DType::u64, {{1}}}};
  if (persistent) {
    // a bf16 state through SMEM: state_in tiles (as many as the schedule
    // declares, at least two, each two TMA boxes of the M tile's rows of 64
    // keys, 128-byte swizzled), an item's initial and final rows in one
    // tile, three mbarriers a tile
    buffers.insert(buffers.end(), {{"state_in", DType::bf16, {{2}, {2}, {0, 1}, {64}}},
                                   {"state_full", DType::u64, {{2}}},
                                   {"state_empty", DType::u64, {{2}}},
                                   {"state_out_full", DType::u64, {{2}}}});
  }
  return {.role = KernelRole::recurrence,
          .fragment = persistent ? "wgmma/recurrence_persistent" : "wgmma/recurrence",
          .call = persistent ? "kda::frag::recurrence_persistent" : "kda::frag::recurrence",
          .buffers = std::move(buffers),
          .roles = {"mma", "producer"},
          .waits_for_prior_grid = true};
}

// The wgmma family's fragments before its kernels': the persistent grid's
// recurrence also takes wgmma/recurrence's helpers.
std::vector<std::string> wgmma_common_fragments(std::vector<std::string> fragments, GridKind grid) {
  if (grid == GridKind::persistent) {
    fragments.push_back("wgmma/recurrence");
  }
  return fragments;
}

// The record is the SMEM image of the wgmma B operands (K-major core
// matrices, no swizzle): KQ = [Kd; Qd] (N 32, K 128) for the projections,
// UPD = [Kr^T T; Mqk T] (N 144, K 16) for the state-and-output update with
// the solve folded in.
FamilyRecipe wgmma_c16_recipe(const std::string& name, GridKind grid) {
  return {
      .name = name,
      .family = Family::wgmma,
      .decomposition = Decomposition::decomposed,
      .grid = grid,
      .chunk_size = 16,
      .common_fragments = wgmma_common_fragments({"common/prologue", "common/sequences", "wgmma/record_core_matrices",
                                                  "common/state_rows", "common/recurrence_io", "common/async_copy",
                                                  "wgmma/async", "common/ready_flags", "common/prepare_ops",
                                                  "wgmma/fold_c16", "common/prepare_step"},
                                                 grid),
      .kernels = {{.role = KernelRole::prepare,
                   .fragment = "common/prepare_chunk",
                   .call = "kda::frag::prepare_chunk",
                   // the fold's operands
                   .buffers = prepare_c16_buffers({{"krt", DType::bf16, {{128}, {16}}}, {"tt", DType::bf16, {{16}, {16}}}}),
                   .roles = {"prepare"}},
                  wgmma_recurrence(16, grid)},
      .chunk_offsets = chunk_offsets_recipe(),
      .workspace = {{.name = "KQ", .bytes = 32 * 128 * 2, .core_lbo = 4 * 128, .core_sbo = 128},
                    {.name = "UPD", .bytes = 144 * 16 * 2, .core_lbo = 18 * 128, .core_sbo = 128},
                    {.name = "BETA", .bytes = 16 * 4},
                    {.name = "GAMMA", .bytes = 128 * 4}},
      .record_image_buffer = "record",
      .wgmma_n = {16, 128},
      .inverse_block = 16,
      .mqk_diagonal = MqkDiagonal::operands,
      .checkpoint_tensor_map_cols = 64,
      .state_tensor_map_cols = grid == GridKind::persistent ? 64 : 0, // wgmma/recurrence_persistent's state tiles
      // pools in common/state_rows, checkpoints in wgmma/recurrence (TMA stores), seq_order in
      // recurrence_pair (common/sequences; the persistent grid's items follow its order)
      .features = {.state_pool = true, .seq_order = true, .checkpoints = true},
  };
}

// Chunk 32 with the fixed exponent anchor: the same record image at twice
// the rows (KQ N 64, K 128; UPD N 160, K 32); the prepare kernel (8 warps)
// inverts blocked 16 -> 32 and folds T into UPD. The recurrence may run
// beside its prepare kernel (prepare_overlap): on the direct grid with the
// chunk-major prepare grid, on the persistent grid on a split of the SMs
// (the prepare kernel's CTAs walking the recurrence CTAs' items).
FamilyRecipe wgmma_c32_recipe(const std::string& name, GridKind grid) {
  return {
      .name = name,
      .family = Family::wgmma,
      .decomposition = Decomposition::decomposed,
      .grid = grid,
      .chunk_size = 32,
      .common_fragments = wgmma_common_fragments({"common/prologue", "common/sequences", "wgmma/record_core_matrices",
                                                  "common/state_rows", "common/recurrence_io", "common/async_copy",
                                                  "wgmma/async", "common/ready_flags", "common/prepare_ops"},
                                                 grid),
      .kernels = {{.role = KernelRole::prepare,
                   .fragment = "wgmma/prepare_chunk32",
                   .call = "kda::frag::prepare_chunk32",
                   .buffers = {{"q_raw", DType::bf16, {{32}, {128}}},
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
                   .roles = {"prepare"}},
                  wgmma_recurrence(32, grid)},
      .chunk_offsets = chunk_offsets_recipe(),
      .workspace = {{.name = "KQ", .bytes = 64 * 128 * 2, .core_lbo = 8 * 128, .core_sbo = 128},
                    {.name = "UPD", .bytes = 160 * 32 * 2, .core_lbo = 20 * 128, .core_sbo = 128},
                    {.name = "BETA", .bytes = 32 * 4},
                    {.name = "GAMMA", .bytes = 128 * 4}},
      .record_image_buffer = "record",
      .wgmma_n = {32, 128},
      .inverse_block = 16, // T11, T22 by forward substitution, merged 16 -> 32
      // direct grid: the chunk-major prepare grid; persistent grid: the
      // prepare kernel's CTAs walk the recurrence CTAs' items (prepare_streams)
      .prepare_overlap = true,
      .mqk_diagonal = MqkDiagonal::raw_rows, // Qda and Ki are bf16: the diagonal from the raw rows
      .checkpoint_tensor_map_cols = 64,
      .state_tensor_map_cols = grid == GridKind::persistent ? 64 : 0, // wgmma/recurrence_persistent's state tiles
      .features = {.state_pool = true, .seq_order = true, .checkpoints = true},
  };
}

// The fused chunk-16 wgmma design on the persistent grid
// (wgmma/fused_persistent): the persistent recurrence's buffers and roles,
// and a "prepare" role of four warps running the prepare kernel's step
// (common/prepare_step) on the prepare kernel's buffers: the raw tiles and
// what aliases them in two scratch sets beside the ring (a leading dimension
// of 2, the step's stage), the rest shared; the tile descriptors the first
// producer warp hands the group for each scratch set, with their two
// mbarriers. Records are formed in the ring slots and never reach the
// workspace.
FamilyRecipe wgmma_fused_c16_persistent_recipe() {
  KernelRecipe kernel = wgmma_recurrence(16, GridKind::persistent);
  kernel.role = KernelRole::fused;
  kernel.fragment = "wgmma/fused_persistent";
  kernel.call = "kda::frag::fused_persistent";
  kernel.roles = {"mma", "producer", "prepare"};
  for (BufferNeed& b : prepare_c16_buffers({{"krt", DType::bf16, {{128}, {16}}}, {"tt", DType::bf16, {{16}, {16}}}})) {
    // the prepare step's per-stage buffers are per scratch set here: two of
    // them beside the ring (wgmma/fused_persistent_names)
    for (const char* set_buffer : {"q_raw", "k_raw", "g_raw", "kd", "qd", "ki", "krt"}) {
      if (b.name == set_buffer) {
        b.min_shape.insert(b.min_shape.begin(), ExtentNeed{2});
      }
    }
    kernel.buffers.push_back(std::move(b));
  }
  for (BufferNeed b : std::vector<BufferNeed>{{"tile_at", DType::i64, {{2}}},
                                              {"tile_valid", DType::i32, {{2}, {2}}},
                                              {"tile_gate", DType::fp32, {{2}, {2}}},
                                              {"tile_bias", DType::fp32, {{2}, {2}, {128}}},
                                              {"tile_beta", DType::fp32, {{2}, {16}}},
                                              {"tile_full", DType::u64, {{2}}},
                                              {"tile_empty", DType::u64, {{2}}}}) {
    kernel.buffers.push_back(std::move(b));
  }
  FamilyRecipe r = wgmma_c16_recipe("wgmma_fused_c16_persistent", GridKind::persistent);
  r.decomposition = Decomposition::fused;
  // the plan's names for the one kernel (wgmma/fused_persistent_names)
  // first, the persistent recurrence's loops last
  r.common_fragments.insert(r.common_fragments.begin() + 1, "wgmma/fused_persistent_names");
  r.common_fragments.push_back("wgmma/recurrence_persistent");
  r.kernels = {std::move(kernel)};
  r.records_in_smem_only = true;
  return r;
}

// The fused tcgen05 kernel at chunk C (tcgen05/fused_*): the MMA shapes, the
// two operand layouts and the TMEM map follow from C.
FamilyRecipe tcgen05_fused_recipe(const std::string& name, int c, std::vector<int> m_tiles) {
  return {
      .name = name,
      .family = Family::tcgen05,
      .decomposition = Decomposition::fused,
      .chunk_size = c,
      .common_fragments = {"common/prologue", "common/sequences", "common/async_copy", "tcgen05/ops",
                           "common/fused_ring", "tcgen05/fused_common", "common/fused_prepare",
                           "tcgen05/fused_consumer"},
      .kernels = {{.role = KernelRole::fused,
                   .fragment = "tcgen05/fused_kernel",
                   .call = "kda::frag::fused_prefill",
                   .buffers = tcgen05_fused_buffers(c),
                   .roles = {"state", "epilogue", "load", "mma", "producer"}}},
      .chunk_offsets = chunk_offsets_recipe(),
      .inverse_block = 8, // 8 x 8 diagonal blocks, merged by doubling up to C
      .m_tiles = std::move(m_tiles),
      .umma =
          FamilyRecipe::Umma{
              // S [Kd|Qd]^T per half; Delta^T T^T; U^T [Kr|Mqk^T] on the [S|O^T] accumulator
              {{"PROJECT", c}, {"SOLVE", c}, {"UPDATE", 128 + c}},
              // [C x 128] tiles as TMA writes them (two 64-column halves, 128-byte swizzle, 8-row
              // atoms 1,024 B apart); [rows x C] operands as core matrices without swizzle
              {{"TILE", 16, 1024, true}, {"NARROW", 128, c / 8 * 128, false}},
              // [S | O^T], P^T then U^T, the bf16 snapshot of S
              {{"STATE", 128}, {"OUT", c}, {"WORK", c}, {"SNAPSHOT", 64}}},
      .proxy_ops_fragment = "tcgen05/proxy_ops",
      .tile_tensor_map_cols = 64,
      // pools and checkpoints in tcgen05/fused_consumer (consume_state), seq_order in recurrence_pair
      .features = {.state_pool = true, .seq_order = true, .checkpoints = true},
  };
}

// The LLVM tier's token-recurrent kernel (compiler/ir/token_kernel): spec
// section 1.3 one token at a time, 128 threads (thread v owns value row v of
// the fp32 state: in its registers, fully unrolled code; or as column v of a
// transposed [key][value row] image in SMEM, rolled loops that LLVM and
// ptxas compile in a fraction of the time), the token's q, k and decay rows
// double-buffered in SMEM. Chunk 16 is only the unit of checkpoint
// intervals. No chunk-offsets kernel: each CTA reads its sequence's offsets
// from cu_seqlens.
FamilyRecipe token_recipe(const std::string& name, StateResidence residence) {
  std::vector<BufferNeed> buffers = {{"q", DType::fp32, {{128}}},
                                     {"k", DType::fp32, {{128}}},
                                     {"alpha", DType::fp32, {{128}}},
                                     {"norm_sums", DType::fp32, {{4}, {2}}}};
  if (residence == StateResidence::shared) {
    buffers.push_back({"state", DType::fp32, {{128}, {128}}});
  }
  return {
      .name = name,
      .family = Family::token,
      .backend = Backend::llvm,
      .decomposition = Decomposition::fused,
      .chunk_size = 16,
      .kernels = {{.role = KernelRole::fused, .buffers = std::move(buffers), .roles = {"rows"}}},
      .m_tiles = {128},
      .residence = residence,
      // all three in the emitter itself (compiler/ir/token_kernel.cpp)
      .features = {.state_pool = true, .seq_order = true, .checkpoints = true},
  };
}

} // namespace

const std::vector<FamilyRecipe>& all_family_recipes() {
  static const std::vector<FamilyRecipe> k_recipes = {
      {
          .name = "warp_mma_decomposed_c16",
          .family = Family::warp_mma,
          .decomposition = Decomposition::decomposed,
          .chunk_size = 16,
          .common_fragments = {"common/prologue", "common/sequences", "warp_mma/record_rows", "common/state_rows",
                               "common/recurrence_io", "common/prepare_ops", "common/prepare_step"},
          .kernels = {{.role = KernelRole::prepare,
                       .fragment = "common/prepare_chunk",
                       .call = "kda::frag::prepare_chunk",
                       // the row-layout record copies Kr from an SMEM tile
                       .buffers = prepare_c16_buffers({{"kr", DType::bf16, {{16}, {136}}}}),
                       .roles = {"prepare"}},
                      {.role = KernelRole::recurrence,
                       .fragment = "warp_mma/recurrence",
                       .call = "kda::frag::recurrence",
                       .buffers = {{"kd", DType::bf16, {{16}, {136}}},
                                   {"qd", DType::bf16, {{16}, {136}}},
                                   {"kr", DType::bf16, {{16}, {136}}},
                                   {"v", DType::bf16, {{16}, {136}}},
                                   {"tinv", DType::bf16, {{16}, {24}}},
                                   {"mqk", DType::bf16, {{16}, {24}}},
                                   {"beta", DType::fp32, {{16}}},
                                   {"gamma", DType::fp32, {{128}}},
                                   {"out", DType::bf16, {{2}, {16}, {136}}}},
                       .roles = {"mma"}}},
          .chunk_offsets = chunk_offsets_recipe(),
          .workspace = {{.name = "KD", .bytes = 16 * 128 * 2},
                        {.name = "QD", .bytes = 16 * 128 * 2},
                        {.name = "KR", .bytes = 16 * 128 * 2},
                        {.name = "TINV", .bytes = 16 * 16 * 2},
                        {.name = "MQK", .bytes = 16 * 16 * 2},
                        {.name = "BETA", .bytes = 16 * 4},
                        {.name = "GAMMA", .bytes = 128 * 4}},
          .inverse_block = 16,
          .mqk_diagonal = MqkDiagonal::operands,
          // pools and checkpoints in common/state_rows, seq_order in recurrence_pair (common/sequences)
          .features = {.state_pool = true, .seq_order = true, .checkpoints = true},
      },
      wgmma_c16_recipe("wgmma_decomposed_c16", GridKind::direct),
      wgmma_c32_recipe("wgmma_decomposed_c32", GridKind::direct),
      // the same designs on the persistent grid (wgmma/recurrence_persistent)
      wgmma_c16_recipe("wgmma_decomposed_c16_persistent", GridKind::persistent),
      wgmma_c32_recipe("wgmma_decomposed_c32_persistent", GridKind::persistent),
      // chunk 16 with the prepare inside the persistent CTA (wgmma/fused_persistent)
      wgmma_fused_c16_persistent_recipe(),
      // The fused design of seed note 000 (one kernel): the load warp and five
      // producer groups fill the ring, the state, MMA and epilogue roles
      // consume it in order with the fp32 state in TMEM. M128 and M64 at
      // chunk 32 (anchored), N16 at chunk 16. On the sm_90a proxy target
      // tcgen05/proxy_ops replaces tcgen05/ops; nothing else changes.
      tcgen05_fused_recipe("tcgen05_fused_c32", 32, {128, 64}),
      tcgen05_fused_recipe("tcgen05_fused_c16", 16, {128}),
      {
          // The fused SM120 design (sm120_c32): the producers of the fused
          // tcgen05 design fill the ring; eight MMA warps consume it with the
          // fp32 state in registers, every product by mma.sync.
          .name = "warp_mma_fused_c32",
          .family = Family::warp_mma,
          .decomposition = Decomposition::fused,
          .chunk_size = 32,
          .common_fragments = {"common/prologue", "common/sequences", "common/async_copy", "common/state_rows",
                               "common/fused_ring", "common/fused_prepare", "warp_mma/fused_consumer"},
          .kernels = {{.role = KernelRole::fused,
                       .fragment = "warp_mma/fused_kernel",
                       .call = "kda::frag::fused_prefill",
                       .buffers = warp_mma_fused_buffers(32),
                       .roles = {"mma", "producer"}}},
          .chunk_offsets = chunk_offsets_recipe(),
          .inverse_block = 8, // 8 x 8 diagonal blocks, merged by doubling up to 32 (common/fused_prepare)
          .m_tiles = {128},
          .tile_tensor_map_cols = 64,
          // pools and checkpoints in common/state_rows, seq_order in recurrence_pair (common/sequences)
          .features = {.state_pool = true, .seq_order = true, .checkpoints = true},
      },
      token_recipe("token_llvm_registers", StateResidence::registers),
      token_recipe("token_llvm_shared", StateResidence::shared),
  };
  return k_recipes;
}

const FamilyRecipe& find_family_recipe(const Schedule& s) {
  std::string available;
  std::string grids; // the grids of the recipes that match but for the grid
  for (const FamilyRecipe& r : all_family_recipes()) {
    const bool m_tile_ok =
        r.m_tiles.empty() || std::find(r.m_tiles.begin(), r.m_tiles.end(), s.m_tile) != r.m_tiles.end();
    const bool residence_ok = !r.residence || *r.residence == s.state.residence;
    if (r.family == s.family && r.backend == s.backend && r.decomposition == s.decomposition &&
        r.chunk_size == s.chunk_size && m_tile_ok && residence_ok) {
      if (r.grid == s.grid) {
        return r;
      }
      grids += fmt::format("{}'{}'", grids.empty() ? "" : ", ", to_string(r.grid));
      continue;
    }
    available += fmt::format("{}{} {} chunk {}{}{}", available.empty() ? "" : ", ", to_string(r.family),
                             to_string(r.decomposition), r.chunk_size,
                             r.m_tiles.empty() ? "" : fmt::format(" m_tile {}", fmt::join(r.m_tiles, "/")),
                             r.residence ? fmt::format(" state in {}", to_string(*r.residence)) : "");
  }
  if (!grids.empty()) {
    throw ScheduleError(s.source, {{"/grid", fmt::format("grid '{}' has no code generator yet for a {} {} design with "
                                                         "chunk {} (its grids: {})",
                                                         to_string(s.grid), to_string(s.family),
                                                         to_string(s.decomposition), s.chunk_size, grids)}});
  }
  throw ScheduleError(s.source, {{"/family", fmt::format("no code generator yet for a {} {} design with chunk {} and "
                                                         "m_tile {} (available: {})",
                                                         to_string(s.family), to_string(s.decomposition),
                                                         s.chunk_size, s.m_tile, available)}});
}

} // namespace kda
