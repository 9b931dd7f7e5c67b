/// \file
/// What the generator knows about each kernel family: which template fragment
/// implements each kernel role, the SMEM buffers that fragment addresses, and
/// the workspace record of decomposed designs. A schedule whose family has no
/// recipe cannot be lowered yet (a ScheduleError says so).
#pragma once

#include "compiler/kernel_plan.hpp"
#include "compiler/schedule.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kda {

/// One dimension of the least shape a fragment addresses: a constant plus
/// multiples of the schedule's M tile and of its kernel's pipeline stages.
struct ExtentNeed {
  std::int64_t constant = 0;
  std::int64_t per_m_tile = 0;
  std::int64_t per_stage = 0;
};

/// An SMEM buffer a fragment addresses: the element type it reads and writes
/// and the least shape it reaches into (a schedule may declare more, e.g. a
/// wider row pitch, never less; check_buffer_needs). No shape: its size is
/// checked by a pass of its own (the record image, check_record_image).
struct BufferNeed {
  std::string name;
  DType dtype = DType::bf16;
  std::vector<ExtentNeed> min_shape;
};

struct KernelRecipe {
  KernelRole role = KernelRole::fused;
  std::string fragment;
  std::string call;
  std::vector<BufferNeed> buffers; ///< exactly the SMEM buffers the fragment uses
  std::vector<std::string> roles;   ///< exactly the warp roles the fragment assigns work to
  int threads = 0;                  ///< only for an entry no schedule kernel declares (chunk offsets)
  /// The fragment calls wait_prior_grid() before it reads what the kernel
  /// launched before it writes, so a schedule may ask for a programmatic launch.
  bool waits_for_prior_grid = false;
};

struct FamilyRecipe {
  std::string name;
  Family family = Family::warp_mma;
  /// What writes its kernels: CUDA from its fragments (templates/), or LLVM
  /// IR (compiler/ir/: its fragments and calls are empty).
  Backend backend = Backend::cuda;
  Decomposition decomposition = Decomposition::decomposed;
  /// The recurrent grid its kernels are written for (the schedule's `grid`).
  GridKind grid = GridKind::direct;
  int chunk_size = 16;
  std::vector<std::string> common_fragments;
  std::vector<KernelRecipe> kernels;
  /// Packed layout: computes each sequence's first chunk; no fragment: the
  /// family's kernels read cu_seqlens themselves (no such entry).
  KernelRecipe chunk_offsets;
  std::vector<WorkspaceField> workspace; ///< field names, sizes, operand layouts; offsets planned by plan_workspace
  /// The recurrence's SMEM buffer that receives whole records with one bulk
  /// copy (its bytes must equal the record's); empty when records are copied
  /// field by field.
  std::string record_image_buffer;
  /// The records never leave SMEM: a fused kernel's prepare warps form each
  /// one in its ring slot in the workspace record's layout (the layout's
  /// constants are still written; the call's workspace holds no records).
  bool records_in_smem_only = false;
  /// wgmma shapes m64nNk16 (register A, bf16 -> fp32) whose wrappers the
  /// emitter writes; empty for families without wgmma.
  std::vector<int> wgmma_n;
  /// (I + L)^-1 in diagonal blocks of this many rows by forward substitution,
  /// merged by doubling (= chunk size: forward substitution throughout).
  int inverse_block = 16;
  /// Its prepare kernel has the chunk-major grid and publishes per-record ready
  /// flags, and its recurrence waits for them (schedule `prepare_overlap`); on
  /// the persistent grid its prepare kernel can walk the recurrence's items.
  bool prepare_overlap = false;
  /// The M tiles its fragments implement (empty: any the schedule may declare).
  std::vector<int> m_tiles;
  /// The state residence its kernels implement (unset: the schedule's is
  /// documentation only).
  std::optional<StateResidence> residence;
  /// tcgen05 designs: what plan_umma turns into descriptors and a TMEM map.
  struct Operand {
    std::string name;
    int lbo = 0; ///< bytes (16 for a swizzled K-major operand: unused)
    int sbo = 0; ///< bytes
    bool swizzle128 = false;
  };
  struct Umma {
    std::vector<std::pair<std::string, int>> shapes; ///< (name, N); M is the schedule's m_tile
    std::vector<Operand> operands;
    std::vector<std::pair<std::string, int>> tmem; ///< (name, columns), in column order
  };
  std::optional<Umma> umma;
  /// The fragment that replaces `tcgen05/ops` on the sm_90a proxy target.
  std::string proxy_ops_fragment;
  /// How its prepare kernel forms Mqk's diagonal (the schedule's
  /// numerics.mqk_diagonal must say the same).
  MqkDiagonal mqk_diagonal = MqkDiagonal::operands;
  /// Columns per TMA box of whole chunks' q, k, g, v tiles (128 B of bf16,
  /// the 128-byte swizzle); 0: its fragments copy rows with cp.async.
  int tile_tensor_map_cols = 0;
  /// Keys per TMA box of the checkpoint-row stores (128 B of bf16, the
  /// 128-byte swizzle; the box's rows are the M tile); 0: its fragments store
  /// the rows with plain stores.
  int checkpoint_tensor_map_cols = 0;
  /// Keys per TMA box of a bf16 state's tiles, loaded and stored by TMA (128
  /// B of bf16, the 128-byte swizzle; the box's rows are the M tile); 0: its
  /// fragments move the state otherwise.
  int state_tensor_map_cols = 0;
  /// The caller features its fragments implement (a schedule may offer only these).
  PlanFeatures features;
};

/// The recipe for `schedule`, or a ScheduleError naming what has no generator.
const FamilyRecipe& find_family_recipe(const Schedule& schedule);

/// Every recipe (for docs and tests).
const std::vector<FamilyRecipe>& all_family_recipes();

} // namespace kda
