/// \file
/// Host-side views of the operands of one KDA prefill call, mirroring the GPU
/// API (spec section 1.1): read-only tensors and layout (`PrefillInputs`), the
/// in/out state (`StateBuffer`) and the scalar/flag options (`PrefillOptions`).
/// Every span is non-owning; sizes are in elements.
#pragma once

#include "compiler/bf16.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>

namespace kda::reference {

constexpr std::int64_t k_head_dim = 128;                    // d = K = V
constexpr std::int64_t k_state_elements = k_head_dim * k_head_dim; // one [V,K] state of one head

enum class StateDtype { bf16, fp32 };

/// A non-owning, dtype-tagged view of a state tensor [slots, H, 128, 128]
/// (index 2 = value row v, index 3 = key column k).
class StateBuffer {
public:
  StateBuffer(std::span<Bf16> data, std::int64_t slots) : m_dtype(StateDtype::bf16), m_bf16(data), m_slots(slots) {}
  StateBuffer(std::span<float> data, std::int64_t slots) : m_dtype(StateDtype::fp32), m_fp32(data), m_slots(slots) {}

  StateDtype dtype() const { return m_dtype; }
  std::int64_t slots() const { return m_slots; }
  /// Number of elements the view holds (not the number it should hold).
  std::size_t size() const { return m_dtype == StateDtype::bf16 ? m_bf16.size() : m_fp32.size(); }
  double load(std::size_t index) const;
  /// Rounds `value` to the buffer's dtype (round to nearest even) and stores it.
  void store(std::size_t index, double value) const;

private:
  StateDtype m_dtype;
  std::span<Bf16> m_bf16;
  std::span<float> m_fp32;
  std::int64_t m_slots;
};

/// cu_seqlens of the packed layout (int32 or int64, N+1 entries); monostate = fixed layout.
using CuSeqlens = std::variant<std::monostate, std::span<const std::int32_t>, std::span<const std::int64_t>>;

/// The read-only operands. Fixed layout: B sequences of T tokens each. Packed
/// layout: B = 1 and `cu_seqlens` splits the T tokens into N sequences.
struct PrefillInputs {
  std::int64_t batch = 1;  // B
  std::int64_t tokens = 0; // T
  std::int64_t heads = 0;  // H
  std::span<const Bf16> q, k, v, g; // [B, T, H, 128], contiguous; g is the raw gate input
  std::span<const Bf16> beta;       // [B, T, H] logits, unit head stride
  std::int64_t beta_row_stride = 0; // elements between consecutive tokens of beta; 0 means H
  std::span<const float> a_log;     // A_log [H]
  std::span<const float> dt_bias;   // [H * 128]
  CuSeqlens cu_seqlens;
  /// Initial state, read and then updated in place (rounded once, at the end).
  std::optional<StateBuffer> initial_state;
  /// Empty, or int32 [N]: sequence i uses slot ssm_state_indices[i] of the `initial_state` pool.
  std::span<const std::int32_t> ssm_state_indices;
};

/// Native checkpoints: rows are the states before each interval of `every_n_tokens` tokens.
struct CheckpointRequest {
  std::int64_t every_n_tokens = 0; // 0: no checkpoints; else a positive multiple of 16
  /// int64 [N+1] first row of each sequence; empty: computed by compute_checkpoint_cu_starts.
  std::span<const std::int64_t> cu_starts;
  /// Empty, or bf16 [Ctot, H, 128, 128] (at least): rows written by the call.
  std::span<Bf16> rows;
};

struct PrefillOptions {
  double scale = 1.0 / std::sqrt(static_cast<double>(k_head_dim));
  /// Present: safe gate a = lb * sigmoid(exp(A_log) * (g + dt_bias)).
  /// Absent: a = -exp(A_log) * softplus(g + dt_bias).
  std::optional<double> lower_bound = -5.0;
  /// Without an initial state: allocate and return a final state [N, H, 128, 128].
  bool output_final_state = false;
  StateDtype final_state_dtype = StateDtype::bf16;
  CheckpointRequest checkpoints;
};

} // namespace kda::reference
