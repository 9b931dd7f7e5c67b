/// \file
/// The lowering passes, each one function in its own file, in the order
/// `lower()` runs them.
#pragma once

#include "compiler/kernel_plan.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/validated_schedule.hpp"

namespace kda {

/// The recipe kernel and the schedule kernel an entry comes from (nullptr for
/// the chunk-offsets entry, which no schedule declares).
const KernelRecipe* kernel_recipe_of(const FamilyRecipe& recipe, const EntryPlan& entry);
const ValidatedKernel* validated_kernel_of(const ValidatedSchedule& schedule, const EntryPlan& entry);

/// A schedule name as a plan-header constant prefix ("kd_lo" -> "KD_LO").
std::string constant_prefix(const std::string& name);

/// Tile constants from the chunk size, head dim and M tile.
TilePlan resolve_tiles(const ValidatedSchedule& schedule, const ShapeKey& shape);

/// One entry per kernel of the recipe (plus chunk offsets for packed input),
/// named kda_prefill_<schedule>_<kernel>, in launch order.
std::vector<EntryPlan> plan_entries(const ValidatedSchedule& schedule, const FamilyRecipe& recipe,
                                    const ShapeKey& shape);

/// Ring depth and producer groups of each entry.
void plan_pipeline(const ValidatedSchedule& schedule, std::vector<EntryPlan>& entries);

/// SMEM symbols of each entry from the validated alias plan; every buffer the
/// fragment needs exists, and every buffer of the plan is used by it.
void place_smem(const ValidatedSchedule& schedule, const FamilyRecipe& recipe, const PlanFeatures& features,
                std::vector<EntryPlan>& entries);

/// Each declared buffer a fragment uses has the dtype it reads and writes and
/// at least the shape it reaches into (the recipe's BufferNeed).
void check_buffer_needs(const ValidatedSchedule& schedule, const FamilyRecipe& recipe);

/// Warp roles of each entry (first warp and count, in schedule order); the
/// roles must be exactly the ones the fragment assigns work to.
void plan_warp_roles(const ValidatedSchedule& schedule, const FamilyRecipe& recipe, std::vector<EntryPlan>& entries);

/// Threads, grid rule and dynamic SMEM of each entry.
void plan_launch(const ValidatedSchedule& schedule, const FamilyRecipe& recipe, std::vector<EntryPlan>& entries);

/// The by-value parameter struct shared by all entries.
/// The per-thread register count a kernel whose roles all declare `registers`
/// starts with (their total over its threads, rounded up to 8); 0 otherwise.
int entry_registers(const KernelDecl& kernel);

/// `tensor_maps`: the plan loads with TMA and takes its tensor maps (v3);
/// `checkpoint_map`: it stores checkpoint rows with TMA (tma_checkpoints);
/// `state_map`: it moves a bf16 state's tiles with TMA (tma_state).
ArgAbi plan_arg_abi(const std::optional<TileTensorMapPlan>& tensor_maps = std::nullopt,
                    const std::optional<CheckpointTensorMapPlan>& checkpoint_map = std::nullopt,
                    const std::optional<StateTensorMapPlan>& state_map = std::nullopt);

/// The TMA tensor maps of a family that loads whole chunks with TMA (nothing
/// for a family that copies rows with cp.async).
std::optional<TileTensorMapPlan> plan_tile_tensor_maps(const ValidatedSchedule& schedule, const FamilyRecipe& recipe);

/// The checkpoint rows' TMA tensor map: only when the plan compiles
/// checkpoints in and the family stores them by TMA.
std::optional<CheckpointTensorMapPlan> plan_checkpoint_tensor_map(const ValidatedSchedule& schedule,
                                                                  const FamilyRecipe& recipe,
                                                                  const PlanFeatures& features);

/// The state's TMA tensor map: only when the family moves a state's tiles by
/// TMA and the shape key's state is bf16 (an fp32 state never goes through
/// SMEM).
std::optional<StateTensorMapPlan> plan_state_tensor_map(const ValidatedSchedule& schedule, const FamilyRecipe& recipe,
                                                        const ShapeKey& shape);

/// The caller features the plan's kernels take: what the schedule's
/// eligibility offers, which the family's generator must implement
/// (ScheduleError at /eligibility/<feature> otherwise); checkpoints only when
/// the shape key compiles them in, which needs the schedule to offer them.
PlanFeatures plan_features(const ValidatedSchedule& schedule, const FamilyRecipe& recipe, const ShapeKey& shape);

/// The template fragments to emit, in order: the family's common fragments
/// (on the sm_90a proxy with the proxy's tensor-memory fragment), then each
/// entry's fragment once.
std::vector<std::string> plan_fragments(const FamilyRecipe& recipe, const std::optional<UmmaPlan>& umma,
                                        const std::vector<EntryPlan>& entries);

/// The schedule's `prepare_overlap` model, if its generator supports running
/// the prepare kernel beside the recurrence (ScheduleError otherwise).
std::optional<PrepareOverlapModel> plan_prepare_overlap(const ValidatedSchedule& schedule, const FamilyRecipe& recipe);

/// The schedule's numerics.mqk_diagonal is how the generator's prepare kernel
/// forms Mqk's diagonal (ScheduleError at /numerics/mqk_diagonal otherwise).
void check_mqk_diagonal(const Schedule& schedule, const FamilyRecipe& recipe);

/// The token kernel of an llvm-backend family (nothing for CUDA families):
/// its entry, launch and ring slots from the planned entry, the state dtype,
/// layout and checkpoints from the shape and features.
std::optional<TokenKernelPlan> plan_token_kernel(const FamilyRecipe& recipe, const KernelPlan& plan);

/// Offsets of the workspace record (16-byte aligned fields).
WorkspacePlan plan_workspace(const FamilyRecipe& recipe);

/// A tcgen05 design's instruction and SMEM descriptors and TMEM column map
/// (nothing for other families); the regions must fit the schedule's
/// `tmem_columns` (ScheduleError otherwise). On the sm_90a proxy target the
/// plan says so and sizes the per-CTA TMEM image.
std::optional<UmmaPlan> plan_umma(const ValidatedSchedule& schedule, const FamilyRecipe& recipe);

/// A design that bulk-copies whole records needs its image buffer to hold
/// exactly one record, 16-byte aligned; ScheduleError otherwise.
void check_record_image(const ValidatedSchedule& schedule, const WorkspacePlan& workspace);

/// A prepare kernel that walks a persistent recurrence's items keeps its walk
/// in `chunk_info` between chunks: no other buffer may share its bytes
/// (ScheduleError otherwise).
void check_walk_info(const ValidatedSchedule& schedule, bool prepare_walks_items);

} // namespace kda
