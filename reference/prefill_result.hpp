/// \file
/// What one reference prefill call produces, in fp64 for comparisons, plus the
/// tensors the operator itself would return (rounded to their storage dtype).
#pragma once

#include "reference/prefill_inputs.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace kda::reference {

/// An owned state tensor [N, H, 128, 128] in bf16 or fp32 (the other vector is empty).
struct OwnedState {
  StateDtype dtype = StateDtype::bf16;
  std::vector<Bf16> bf16;
  std::vector<float> fp32;

  /// A tensor of `slots` states of `heads` heads, every element a NaN (poisoned).
  static OwnedState poisoned(StateDtype dtype, std::int64_t slots, std::int64_t heads);
  StateBuffer view(std::int64_t slots);
  /// Element `index` as a double.
  double load(std::size_t index) const;
};

struct PrefillResult {
  std::int64_t sequences = 0;  // N
  std::int64_t heads = 0;      // H
  /// fp64 [B*T, H, 128]: o_t = scale * S_t * q_hat_t, rows in input token order.
  std::vector<double> output;
  /// fp64 [N, H, 128, 128]: the state after each sequence's last token, never
  /// rounded; computed on every call (also when no state is written anywhere).
  std::vector<double> final_state;
  /// The final state the operator allocates and returns: present only when no
  /// initial state is given and output_final_state is set.
  std::optional<OwnedState> allocated_final_state;
  /// fp64 [Ctot, H, 128, 128] checkpoint rows (empty without a checkpoint request).
  std::vector<double> checkpoints;
  /// int64 [N+1] first checkpoint row of each sequence (empty without a request).
  std::vector<std::int64_t> checkpoint_cu_starts;
};

/// Rounds fp64 values (e.g. PrefillResult::output) to bf16, round to nearest even.
std::vector<Bf16> round_values_to_bf16(std::span<const double> values);

/// Index of element (v, k) of head `head` of state `slot` in a [slots, H, 128, 128] tensor.
inline std::size_t state_index(std::int64_t slot, std::int64_t head, std::int64_t heads, std::int64_t v,
                               std::int64_t k) {
  return static_cast<std::size_t>(((slot * heads + head) * k_head_dim + v) * k_head_dim + k);
}

} // namespace kda::reference
