/// \file
/// Validation of a prefill call before any launch: dtype, shape, stride,
/// device, 16-byte alignment, aliasing of outputs with inputs, layout rules.
/// Every failure is a TensorError naming the argument with expected vs actual.
/// Device-side values (cu_seqlens, ssm_state_indices, seq_order and
/// checkpoint_cu_starts contents) are a caller contract: checking them would
/// need a device synchronisation.
#pragma once

#include "compiler/schedule_enums.hpp"
#include "kdajit/prefill_args.hpp"

#include <array>
#include <functional>
#include <optional>

namespace kda {

/// What the checks derive from the arguments.
struct ProblemShape {
  LayoutKind layout = LayoutKind::fixed;
  std::int64_t batch = 0;        ///< B
  std::int64_t seq_len = 0;      ///< T (fixed layout), tokens per batch row
  std::int64_t total_tokens = 0; ///< B x T
  int heads = 0;
  int num_seqs = 0;              ///< N
  bool offsets_i64 = false;
  StatePrecision state_dtype = StatePrecision::bf16; ///< of the state read and/or written
  bool state_in = false;         ///< initial_state given (updated in place)
  bool state_out = false;        ///< a state is written (in place, or a final state)
  std::int64_t beta_token_stride = 0;
  bool state_pool = false;       ///< ssm_state_indices given: initial_state is a pool
  std::int64_t state_slot_stride = 0; ///< elements between state slots (H x 128 x 128 without a pool)
  bool seq_order = false;        ///< the caller's order of the packed sequences
  std::int64_t checkpoint_interval = 0; ///< checkpoint_every_n_tokens (0: no checkpoints)
  /// The call's lower_bound (natural log); routing skips schedules whose
  /// eligibility range or BF16-safe range excludes it. Nothing: not checked.
  std::optional<double> lower_bound;
};

/// Device ordinal of a device pointer, or nothing for host or unknown memory.
using PointerDevice = std::function<std::optional<int>(const void*)>;

/// Every tensor argument of a call with its name: the inputs first
/// (`k_call_inputs` of them: q .. checkpoint_cu_starts, initial_state among
/// them), then the outputs out, final_state, state_checkpoints.
struct NamedTensor {
  const char* name;
  const TensorRef* tensor;
};
constexpr std::size_t k_call_inputs = 12;
constexpr std::size_t k_call_tensors = 15;
std::array<NamedTensor, k_call_tensors> call_tensors(const PrefillArgs& args);

/// Checks everything that does not depend on the schedule.
ProblemShape check_prefill_args(const PrefillArgs& args, int device, const PointerDevice& pointer_device);

/// lower_bound must be finite, negative, inside the schedule's eligibility
/// range [min, max) and inside its BF16-safe range |lower_bound| < safe.
void check_lower_bound(double lower_bound, double range_min, double range_max, double safe_magnitude,
                       const std::string& schedule);

} // namespace kda
