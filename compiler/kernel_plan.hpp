/// \file
/// KernelPlan: everything the emitter and the launcher need, resolved from a
/// validated schedule, a target and a shape key by `lower()`. No JSON, no
/// schedule lookups after this point.
#pragma once

#include "compiler/schedule.hpp"
#include "compiler/shape_key.hpp"
#include "compiler/smem_layout.hpp"
#include "compiler/target.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kda {

/// Tile constants of the family's fragments.
struct TilePlan {
  int chunk_size = 16;
  int head_dim = 128;
  int m_tile = 128;
  int mma_m = 16, mma_n = 8, mma_k = 16; ///< warp_mma: m16n8k16
  int value_rows_per_warp = 32;
};

/// One SMEM buffer as the kernel addresses it: byte offset of ring slot 0 (or
/// of the shared region), and the row pitch in elements.
struct SmemSymbol {
  std::string name;       ///< upper-case constant prefix, e.g. "KD"
  std::string buffer;     ///< schedule buffer name
  Region region = Region::stage;
  std::int64_t offset = 0; ///< from the dynamic SMEM base (already aligned)
  std::int64_t bytes = 0;
  std::int64_t pitch = 0;  ///< last dimension (elements)
  std::string c_type;      ///< element type in device code, e.g. "kda::u16" for bf16
  std::int64_t elements = 0;
  /// false: declared `only_with` a feature the plan lacks; its constants are 0
  /// and it has no place in the layout.
  bool present = true;
};

/// How many blocks a kernel gets, decided at launch from runtime sizes.
enum class GridRule {
  chunks_by_heads,    ///< x: an upper bound of the chunks of all sequences, y: heads
  sequences_by_heads, ///< x: sequences, y: heads x (128 / m_tile)
  single_block,       ///< one block (chunk offsets of packed input)
  /// x: min(work items, SMs x ctas_per_sm), y = 1: each CTA loops over the
  /// work items (sequences x heads x (128 / m_tile)) x, x + gridDim.x, ...
  persistent_items,
};

/// Packed calls of at most this many sequences get no chunk_offsets launch:
/// the kernels derive the chunk offsets and the sequence order from
/// cu_seqlens in one warp (lane n: sequence n, lane N: the chunk total), so
/// the call saves that kernel and its dependency. Emitted into every plan as
/// kda_plan::WARP_TABLE_MAX_SEQUENCES; the runtime skips the launch by it.
constexpr int k_warp_table_max_sequences = 31;

struct LaunchPlan {
  GridRule grid = GridRule::sequences_by_heads;
  int threads = 128;
  std::int64_t dynamic_smem = 0;
  int min_blocks_per_sm = 0; ///< __launch_bounds__'s second argument; 0: none
  int chunks_per_cta = 1;    ///< chunks_by_heads: x = ceil(chunk bound / this)
  /// persistent_items: CTAs resident per SM (1 for a kernel that takes the
  /// SM's SMEM, else min_blocks_per_sm or 1)
  int ctas_per_sm = 1;
  /// Registers per thread at entry when the warp roles move registers with
  /// setmaxnreg (`__maxnreg__`, so ptxas knows the entry count); 0: none.
  int entry_registers = 0;
  /// Launched with programmatic stream serialization when the kernel before it
  /// is the same call's (the launcher's sequential path); schedule field
  /// `programmatic_launch`.
  bool programmatic = false;
};

struct PipelinePlan {
  int stages = 1;
  int producer_groups = 1;
};

/// A named group of consecutive warps (schedule `warp_roles`, in order).
struct WarpRolePlan {
  std::string name;   ///< constant prefix (upper case): MMA_WARPS, MMA_FIRST_WARP
  int warps = 0;
  int first_warp = 0;
  int registers = 0;  ///< setmaxnreg target of the role's warpgroups (<NAME>_REGISTERS); 0: none
};

/// One `extern "C"` entry point of the module.
struct EntryPlan {
  std::string entry_name;   ///< kda_prefill_<schedule>_<kernel>
  std::string kernel;       ///< schedule kernel name, or "chunk_offsets" (role sequence_table)
  KernelRole role = KernelRole::fused;
  std::string fragment;     ///< template fragment that implements it
  std::string call;         ///< the fragment function the entry calls
  std::string plan_namespace; ///< kda_plan::<this> holds its constants
  LaunchPlan launch;
  PipelinePlan pipeline;
  std::vector<WarpRolePlan> roles;
  std::vector<SmemSymbol> smem;
  std::int64_t stage_bytes = 0;
  std::int64_t smem_bytes = 0; ///< the plan's SMEM layout in all (its features' buffers included)
  int launch_order = 0;     ///< entries launch in this order
};

enum class ArgType { pointer, i32, i64, f32, tensor_map }; ///< tensor_map: 128 bytes, 64-byte aligned (CUtensorMap)

struct ArgField {
  std::string name;   ///< also the launcher's argument name
  ArgType type = ArgType::pointer;
  std::string c_type; ///< device-side declaration type
  std::int64_t offset = 0;
  std::int64_t size = 0;
};

/// The single by-value parameter struct every entry point takes.
struct ArgAbi {
  /// 2: ready_flags, ready_epoch, chunk_begin, chunk_major; 3: TMA tensor maps
  /// (plans that load with TMA); 4: state pools, seq_order, checkpoints; 5:
  /// prepare_streams (a prepare kernel walking a persistent recurrence's items)
  int version = 5;
  std::vector<ArgField> fields;
  std::int64_t size = 0;
  std::int64_t alignment = 8;
  const ArgField* find(const std::string& name) const;
};

/// A decomposed design's per-(chunk, head) workspace record.
struct WorkspaceField {
  std::string name; ///< upper-case constant prefix, e.g. "KD"
  std::int64_t offset = 0;
  std::int64_t bytes = 0;
  /// A K-major bf16 tensor-core operand stored as 8-row x 16-byte core
  /// matrices without swizzle (PTX ISA 9.7.15.5.1 "Shared Memory Matrix
  /// Layout"): element (n, k) at (k / 8) lbo + (n / 8) sbo + 16 (n % 8) + 2 (k % 8).
  /// 0: a plain field (not addressed by a descriptor).
  std::int64_t core_lbo = 0; ///< bytes between core matrices along K
  std::int64_t core_sbo = 0; ///< bytes between core matrices along N
};

struct WorkspacePlan {
  std::vector<WorkspaceField> fields;
  std::int64_t record_bytes = 0; ///< 0: no workspace
  std::string image_buffer;      ///< SMEM buffer receiving whole records (bulk copy), or empty
  /// The records live in the call's workspace (a prepare kernel writes them);
  /// false: a fused kernel forms each record in SMEM in the record's layout
  /// and the workspace holds none.
  bool records_in_workspace = true;
  /// Bytes the workspace holds for each CTA of the recurrent grid after the
  /// records (the tcgen05 proxy's TMEM image); 0: none.
  std::int64_t cta_scratch_bytes = 0;
};

/// One tcgen05.mma shape of a fused design (.kind::f16, bf16 in, fp32 out,
/// K-major A and B) with its host-encoded instruction descriptor.
struct UmmaShape {
  std::string name; ///< constant UMMA_IDESC_<name>
  int m = 0;
  int n = 0;
  std::uint32_t idesc = 0;
};

/// One SMEM operand layout, K-major: without swizzle, 8-row x 16-byte core
/// matrices `lbo` bytes apart along K and `sbo` along M / N; with the 128-byte
/// swizzle, 8-row x 128-byte atoms `sbo` apart along M / N (K advances inside
/// the atom's 64 elements; `lbo` unused). The descriptor's constant fields (the
/// address is added on the device).
struct UmmaOperand {
  std::string name; ///< constants UMMA_<name>_LBO, _SBO, UMMA_DESC_<name>
  int lbo = 0;
  int sbo = 0;
  bool swizzle128 = false;
  std::uint64_t desc = 0;
};

/// A block of TMEM columns (all 128 lanes).
struct TmemRegion {
  std::string name; ///< constant TMEM_<name>_COL
  int column = 0;
  int columns = 0;
};

/// The tensor-core side of a tcgen05 design.
struct UmmaPlan {
  int core_lbo = 128;
  std::vector<UmmaShape> shapes;
  std::vector<UmmaOperand> operands;
  std::vector<TmemRegion> tmem;
  int tmem_columns = 0;              ///< allocated (tcgen05.alloc: a power of two >= 32)
  bool proxy = false;                ///< the sm_90a proxy: TMEM is a per-CTA global image
  std::int64_t tmem_image_bytes = 0; ///< proxy: 128 lanes x tmem_columns x 4
};

/// TMA loads of whole chunks: the launcher encodes one tensor map per token
/// tensor per call (the addresses change), each viewing it as
/// [tokens][heads][128] bf16 rows with boxes of `box_cols` columns x
/// `box_rows` rows and the 128-byte swizzle (compiler/encodings/tensor_map.hpp).
/// The ABI carries them as tma_<tensor>.
struct TileTensorMapPlan {
  int box_cols = 0;
  int box_rows = 0;
  std::vector<std::string> tensors; ///< "q", "k", "g", "v": ABI fields tma_q, ...
};

/// TMA stores of checkpoint rows (plans that compile checkpoints in, of a
/// family whose fragments store the rows by TMA): the launcher encodes one map
/// of the call's state_checkpoints per call (the address changes), viewing it
/// as C·H matrices of [128 value rows][128 keys] bf16 with boxes of `box_cols`
/// keys x `box_rows` value rows (the CTA's M tile) and the 128-byte swizzle
/// (compiler/encodings/tensor_map.hpp). The ABI carries it as tma_checkpoints.
struct CheckpointTensorMapPlan {
  int box_cols = 0;
  int box_rows = 0;
};

/// TMA loads and stores of a bf16 state's tiles (plans of a family whose
/// fragments move the state through SMEM by TMA, with a bf16 state): the
/// launcher encodes one map of the call's state memory per call (the initial
/// state or its pool, updated in place, else the final state), viewing it as
/// slots of [heads x 128 value rows][128 keys] bf16 with boxes of `box_cols`
/// keys x `box_rows` value rows (the CTA's M tile) and the 128-byte swizzle
/// (compiler/encodings/tensor_map.hpp: swizzled_state_slots_tensor_map). The
/// ABI carries it as tma_state.
struct StateTensorMapPlan {
  int box_cols = 0;
  int box_rows = 0;
};

/// The LLVM tier's token-recurrent kernel (family `token`, backend llvm):
/// what compiler/ir/token_kernel writes as IR. Its one entry takes the plan's
/// ArgAbi struct by value like every CUDA entry; its dynamic SMEM is the
/// schedule's two-slot ring of the token's rows (offsets of slot 0, slots
/// `stage_bytes` apart).
struct TokenKernelPlan {
  std::string entry_name;
  int threads = 128;      ///< thread v: value row v (= the head dimension)
  int stages = 2;         ///< ring slots (a token's rows are read after one barrier)
  std::int64_t stage_bytes = 0;
  std::int64_t q_offset = 0;     ///< fp32 [128] raw q of the token
  std::int64_t k_offset = 0;     ///< fp32 [128] raw k
  std::int64_t alpha_offset = 0; ///< fp32 [128] per-key decay
  std::int64_t norm_sums_offset = 0; ///< fp32 [warps][2] partial sums of q^2 and k^2
  /// registers: value row v in thread v's registers (unrolled code); shared:
  /// an fp32 [128 keys][128 value rows] image at `state_offset` (rolled loops)
  StateResidence residence = StateResidence::registers;
  std::int64_t state_offset = 0;
  std::int64_t dynamic_smem = 0;
  LayoutKind layout = LayoutKind::fixed;
  StatePrecision state = StatePrecision::bf16; ///< the state tensor in memory
  bool checkpoints = false; ///< compiled in (ShapeKey::checkpoints)
  /// Outputs stored as fp32 instead of bf16: the GPU oracle of long tests
  /// (never a routed kernel; set by the tests on a plan they own).
  bool fp32_output = false;
};

/// What a call may ask of the plan's kernels beyond the plain operator: the
/// family's generator implements them (FamilyRecipe::features), the schedule
/// offers them (its eligibility), and `lower()` keeps those both grant.
/// State pools and seq_order are kernel arguments (the plain plan takes them);
/// checkpoints are compiled in only when the shape key asks
/// (`ShapeKey::checkpoints`, constant CHECKPOINTS), so a plan without them
/// runs the same code as before they existed.
struct PlanFeatures {
  bool state_pool = false;  ///< ssm_state_indices: sequence i reads and updates pool slot idx[i]
  bool seq_order = false;   ///< the caller's order of the packed sequences replaces longest-first
  bool checkpoints = false; ///< native checkpoints: the state before every interval, bf16
  bool operator==(const PlanFeatures&) const = default;
};


/// The numerics the generated kernels implement, and the one source of the
/// constants that the CPU emulation (reference/emulation_config.hpp) and the
/// kernels (ANCHOR_ROWS, INVERSE_BLOCK, MQK_DIAGONAL_FROM_RAW_ROWS) both use.
struct NumericsPlan {
  std::vector<std::string> bf16_rounding; ///< the schedule's rounding points, in program order
  int anchor_rows = 0;   ///< C_a = anchor_rows x lower_bound log2 e (C / 2); 0: unanchored
  int inverse_block = 0; ///< (I + L)^-1: diagonal blocks of this size by forward substitution, merged by
                         ///< doubling up to the chunk (= chunk size: forward substitution throughout)
  bool mqk_diagonal_from_raw_rows = false; ///< Mqk's diagonal scale rq rk (q . k) from the raw rows (MQK_DIAGONAL_FROM_RAW_ROWS)
};

/// The numerics of `schedule` when its generator inverts in diagonal blocks of
/// `inverse_block` rows.
NumericsPlan plan_numerics(const Schedule& schedule, int inverse_block);

struct KernelPlan {
  std::string schedule_name;
  std::string schedule_source;
  Target target;
  ShapeKey shape;
  Family family = Family::warp_mma;
  Backend backend = Backend::cuda; ///< llvm: `token` holds the kernel, there is no CUDA source
  ExponentAnchor exponent_anchor = ExponentAnchor::none;
  double safe_lower_bound_magnitude = 0.0;
  double lower_bound_min = 0.0; ///< eligibility range [min, max)
  double lower_bound_max = 0.0;
  TilePlan tiles;
  std::vector<EntryPlan> entries; ///< in launch order
  ArgAbi abi;
  WorkspacePlan workspace;
  std::vector<std::string> fragments; ///< template fragments to emit, in order
  std::vector<int> wgmma_n;           ///< wgmma m64nNk16 wrappers to emit (register A)
  std::optional<PrepareOverlapModel> prepare_overlap; ///< the prepare kernel may run beside the recurrence
  /// Beside a persistent recurrence the prepare kernel's CTAs walk the items
  /// of the recurrence's CTAs (prepare_streams) instead of taking one chunk
  /// each from their grid position (runtime/prepare_overlap: the split).
  bool prepare_walks_items = false;
  NumericsPlan numerics;
  std::optional<UmmaPlan> umma; ///< tcgen05 designs (and their sm_90a proxy)
  std::optional<TileTensorMapPlan> tile_tensor_maps; ///< whole chunks loaded with TMA
  std::optional<CheckpointTensorMapPlan> checkpoint_tensor_map; ///< checkpoint rows stored with TMA
  std::optional<StateTensorMapPlan> state_tensor_map;           ///< a bf16 state's tiles moved by TMA
  PlanFeatures features; ///< what calls of this plan may ask (see PlanFeatures)
  std::optional<TokenKernelPlan> token; ///< the llvm backend's kernel
};

} // namespace kda
