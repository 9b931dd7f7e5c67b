/// \file
/// The preprocessed tokens of one (sequence, head) (spec 1.2), computed on
/// demand in fp64 from the bf16 inputs: L2-normalized q and k, v, the
/// natural-log decay a of the gate in force and beta = sigmoid(logit).
#pragma once

#include "reference/prefill_inputs.hpp"
#include "reference/sequences.hpp"

#include <array>
#include <cstdint>
#include <optional>

namespace kda::reference {

struct PreparedToken {
  std::array<double, k_head_dim> q_hat{};
  std::array<double, k_head_dim> k_hat{};
  std::array<double, k_head_dim> v{};
  std::array<double, k_head_dim> log_decay{}; // natural log a_t; decay alpha_t = e^a_t
  double beta = 0.0;
};

/// A view of the tokens of one (sequence, head); `inputs` must outlive it.
class HeadTokens {
public:
  HeadTokens(const PrefillInputs& inputs, std::optional<double> lower_bound, SequenceRange range, std::int64_t head);

  std::int64_t length() const { return m_range.length; }
  std::int64_t head() const { return m_head; }
  std::optional<double> lower_bound() const { return m_lower_bound; }
  /// Token `t` of the sequence, 0 <= t < length().
  PreparedToken token(std::int64_t t) const;

private:
  const PrefillInputs& m_inputs;
  std::optional<double> m_lower_bound;
  SequenceRange m_range;
  std::int64_t m_head;
};

} // namespace kda::reference
