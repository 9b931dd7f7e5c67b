/// \file
/// The arguments of kda::recurrent_kda_prefill (C++ API).
#pragma once

#include "kdajit/family.hpp"
#include "kdajit/tensor_ref.hpp"

#include <cmath>
#include <optional>
#include <string>

namespace kda {

struct PrefillArgs {
  // Inputs (device pointers). q, k, v, g: bf16 [B,T,H,128] contiguous. beta:
  // bf16 [B,T,H] logits, unit head stride, any token-row stride. A_log: fp32
  // [H]. dt_bias: fp32 [H,128] or [H*128].
  TensorRef q, k, v, g, beta, a_log, dt_bias;
  double scale = 1.0 / std::sqrt(128.0);
  double lower_bound = -5.0; ///< natural-log lower bound of the per-token log-decay
  /// Optional state [N,H,128,128] bf16 or fp32 (index 2 = value row, 3 = key
  /// column): read as the initial state and updated IN PLACE, even when
  /// output_final_state is false. With ssm_state_indices, a pool
  /// [N_pool,H,128,128] instead: each [H,128,128] slot contiguous, the slot
  /// pitch (stride 0) at least H*128*128 elements; base and pitch 16-byte
  /// aligned.
  TensorRef initial_state;
  /// Optional int32 [N] (device): sequence i reads and updates slot
  /// ssm_state_indices[i] of the initial_state pool in place; other slots are
  /// not touched. Slot ids are a caller contract (unique, in [0, N_pool)),
  /// never read on the host.
  TensorRef ssm_state_indices;
  /// Optional int32 [N] (device), packed layout only: the order in which the
  /// kernels take the sequences (a permutation of 0..N-1, a caller contract)
  /// instead of longest first. Results do not depend on it.
  TensorRef seq_order;
  /// Native checkpoints (all three, or none): the states before each interval
  /// of checkpoint_every_n_tokens tokens (a positive multiple of 16) into the
  /// caller's bf16 rows state_checkpoints [C,H,128,128]; sequence i writes
  /// rows checkpoint_cu_starts[i] + r (int64 [N+1], device) for r = 0 ..
  /// ceil(L_i / interval) - 1: row 0 the initial state (zeros without one),
  /// row r the state after r x interval tokens. The row counts are a caller
  /// contract (checked against C for the fixed layout only).
  TensorRef state_checkpoints;
  TensorRef checkpoint_cu_starts;
  std::int64_t checkpoint_every_n_tokens = 0; ///< 0: no checkpoints
  /// Produce a final state when no initial state is given.
  bool output_final_state = false;
  /// Packed layout: int32 or int64 [N+1] offsets (B must be 1). Values are a
  /// caller contract (0 first, non-decreasing, last = T); not read on the host.
  TensorRef cu_seqlens;
  /// Optional caller-provided output, bf16 with v's shape; allocated otherwise.
  TensorRef out;
  /// Optional caller-provided final state (only with output_final_state and no
  /// initial state); allocated otherwise (bf16).
  TensorRef final_state;
  void* stream = nullptr; ///< CUstream; nullptr = the legacy default stream
};

struct PrefillOptions {
  std::optional<std::string> schedule; ///< force one schedule by name (refused with the reason if ineligible)
  /// Choose only among this family's schedules (refused with every reason if
  /// none is eligible); the tuning table decides among them as usual.
  std::optional<Family> family;
  /// Let a schedule with `prepare_overlap` run its prepare kernel beside its
  /// recurrence when the GPU can hold both (the results are the same bits
  /// either way; false runs them one after the other).
  bool prepare_overlap = true;
  /// Compile for this target instead of the router's choice; needs `schedule`.
  /// The schedule must list it (or it is the sm_90a proxy of a tcgen05
  /// schedule: `sm_90a_proxy`), and the device must run it (same CC major,
  /// and the exact CC for an architecture-specific target); refused otherwise.
  std::optional<std::string> target;
  /// Tiered JIT (unset: the environment's KDAJIT_TIERED=1 turns it on; off
  /// by default). When the routed schedule's kernel is not built yet (in no
  /// bundle, not in the cache), an eager call runs the LLVM tier's token
  /// kernel (schedule token_llvm: milliseconds to build) while NVRTC builds
  /// the routed kernel on a background thread; the first call after it is
  /// ready runs it. Both meet spec section 8, but their bits differ, so
  /// results then depend on compile timing: PrefillResult::tier says which
  /// ran. A background compile that fails is reported once (stderr) and the
  /// calls go on with tier 0; process exit waits for a compile in flight.
  /// PrefillPlan always waits for the routed kernel.
  std::optional<bool> tiered;
};

} // namespace kda
