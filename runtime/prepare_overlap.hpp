/// \file
/// Whether a call runs a schedule's prepare kernel beside its recurrence
/// (schedule `prepare_overlap`), and with what lead: a pure decision from the
/// plan's throughput model, the shape and the resources of one SM, so that it
/// is tested on the CPU with simulated devices.
///
/// The overlapped launch: prepare the local chunks [0, lead) of every
/// (sequence, head) pair (chunk-major grid), then the recurrence on a
/// high-priority stream, waiting per record on its ready flag, while a second
/// prepare kernel makes the chunks [lead, n). Deadlock freedom rests on facts
/// this decision checks: a recurrence CTA needs more than half an SM's shared
/// memory (one per SM) and there are fewer recurrence CTAs than SMs, so every
/// recurrence CTA is resident at once (no pending one can hold the second
/// prepare kernel back) and at least one SM holds none, where the prepare
/// kernel the recurrence waits for always makes progress (whether a prepare
/// CTA also fits beside a recurrence CTA only changes the model's rate). The
/// recurrences of all overlapped calls in a context go through one stream
/// (runtime/overlap_streams), so two calls never hold SMs waiting for each
/// other's prepare kernels.
///
/// The split (a persistent recurrence, plans whose prepare kernel walks the
/// items: KernelPlan::prepare_walks_items): zero the ready flags, then the
/// persistent recurrence on R CTAs of the S SMs, one per SM, beside R x K
/// prepare CTAs (its programmatic dependent on the caller's stream,
/// runtime/prefill_call) whose CTA b prepares every K-th record of
/// recurrence CTA (b mod R)'s items. R = S t ρ
/// / (1 + t ρ) balances the recurrence's chunk every t µs per CTA against
/// the prepare kernel's ρ chunks per µs per SM on the other S - R SMs; K is
/// as many prepare CTAs per recurrence CTA as those SMs hold. Deadlock
/// freedom: fewer recurrence CTAs than SMs, one per SM (more than half an
/// SM's shared memory), and no prepare CTA ever waits, so every record a
/// recurrence CTA waits for is made by a CTA that is running or will run.
#pragma once

#include "compiler/kernel_plan.hpp"
#include "runtime/environment.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kda {

struct SmResources {
  std::int64_t smem_bytes = 0;              ///< shared memory per SM
  std::int64_t reserved_smem_per_block = 0; ///< the driver's per-block reservation
  std::int64_t registers = 0;               ///< 32-bit registers per SM
  std::int64_t threads = 0;                 ///< resident threads per SM
};

/// One compiled kernel's per-block resources.
struct KernelFootprint {
  int threads = 0;
  int registers_per_thread = 0;
  std::int64_t smem_bytes = 0; ///< static + dynamic
};

struct OverlapRequest {
  int sm_count = 0;
  SmResources sm;
  KernelFootprint prepare;
  KernelFootprint recurrence;
  std::int64_t recurrence_ctas = 0;       ///< sequences x heads x (128 / m_tile)
  std::int64_t pairs = 0;                 ///< sequences x heads
  std::int64_t heads = 0;
  std::int64_t sequences = 0;
  std::int64_t chunks_per_sequence = 0;   ///< the model's n (fixed: exact; packed: the mean, rounded up)
  std::int64_t chunk_grid_extent = 0;     ///< local chunks the prepare grid must cover (the longest sequence's bound)
  bool allowed = true;                    ///< PrefillOptions::prepare_overlap
  bool persistent = false;                ///< the recurrence takes items in turn (the split)
  std::optional<int> streams;             ///< the split's R, as given (KDAJIT_PREPARE_STREAMS), instead of the model's
};

struct OverlapDecision {
  bool overlap = false;
  std::int64_t lead_chunks = 0;  ///< local chunks of every pair prepared before the recurrence starts
  std::int64_t chunk_extent = 0; ///< local chunks the two prepare grids cover together (the request's)
  std::string reason;           ///< why (not), for route explanations and bench output
  int streams = 0;              ///< the split: recurrence CTAs (0: the chunk-major overlap)
  std::int64_t prepare_ctas = 0; ///< the split: prepare CTAs walking their items (streams x K)
  runtime::SplitOrder split_order = runtime::SplitOrder::programmatic; ///< the split's launch order
};

/// Registers a block holds: per warp, registers x 32 rounded up to 256.
std::int64_t block_registers(const KernelFootprint& kernel);

/// Whether one prepare CTA fits on an SM beside one recurrence CTA: shared
/// memory, threads, and registers per scheduler quadrant in the worst case.
bool prepare_fits_beside_recurrence(const OverlapRequest& request);

/// Prepare CTAs one SM holds (shared memory, threads and registers; no
/// recurrence CTA beside them).
std::int64_t prepare_ctas_per_sm(const OverlapRequest& request);

/// The split's recurrence CTAs by the model: round(S t ρ / (1 + t ρ)) in
/// [1, S - 1].
int modelled_streams(const PrepareOverlapModel& model, int sm_count);

/// The lead of the throughput model (PrepareOverlapDecl), before clamping to
/// [min_lead_chunks, n].
std::int64_t modelled_lead_chunks(const PrepareOverlapModel& model, const OverlapRequest& request);

/// The overlap, or the split where request.persistent.
OverlapDecision decide_prepare_overlap(const PrepareOverlapModel& model, const OverlapRequest& request);

} // namespace kda
