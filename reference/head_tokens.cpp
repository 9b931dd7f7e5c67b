#include "reference/head_tokens.hpp"

#include "compiler/errors.hpp"
#include "reference/gate.hpp"

namespace kda::reference {
namespace {

void load_row(std::span<const Bf16> tensor, std::size_t offset, std::array<double, k_head_dim>& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<double>(bf16_to_float(tensor[offset + i]));
  }
}

} // namespace

HeadTokens::HeadTokens(const PrefillInputs& inputs, std::optional<double> lower_bound, SequenceRange range,
                       std::int64_t head)
    : m_inputs(inputs), m_lower_bound(lower_bound), m_range(range), m_head(head) {}

PreparedToken HeadTokens::token(std::int64_t t) const {
  KDA_INTERNAL_ASSERT(t >= 0 && t < m_range.length, "token index outside the sequence");
  const std::int64_t row = m_range.token_begin + t;
  const auto offset = static_cast<std::size_t>((row * m_inputs.heads + m_head) * k_head_dim);
  PreparedToken token;
  std::array<double, k_head_dim> raw{};
  load_row(m_inputs.q, offset, raw);
  l2_normalize(raw, token.q_hat);
  load_row(m_inputs.k, offset, raw);
  l2_normalize(raw, token.k_hat);
  load_row(m_inputs.v, offset, token.v);
  load_row(m_inputs.g, offset, raw);
  const auto a_log = static_cast<double>(m_inputs.a_log[static_cast<std::size_t>(m_head)]);
  const auto bias_offset = static_cast<std::size_t>(m_head * k_head_dim);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto dt_bias = static_cast<double>(m_inputs.dt_bias[bias_offset + i]);
    token.log_decay[i] = gate_log_decay(raw[i], a_log, dt_bias, m_lower_bound);
  }
  const std::int64_t stride = m_inputs.beta_row_stride != 0 ? m_inputs.beta_row_stride : m_inputs.heads;
  const Bf16 logit = m_inputs.beta[static_cast<std::size_t>(row * stride + m_head)];
  token.beta = sigmoid(static_cast<double>(bf16_to_float(logit)));
  return token;
}

} // namespace kda::reference
