#include "reference/token_reference.hpp"

#include "compiler/errors.hpp"
#include "reference/prefill_driver.hpp"

#include <array>
#include <cmath>

namespace kda::reference {

void advance_token(std::span<double> state, const PreparedToken& token, double scale, std::span<double> output) {
  KDA_INTERNAL_ASSERT(state.size() == static_cast<std::size_t>(k_state_elements), "state must be 128 x 128");
  KDA_INTERNAL_ASSERT(output.size() == static_cast<std::size_t>(k_head_dim), "output row must hold 128 values");
  std::array<double, k_head_dim> alpha{};
  for (std::size_t k = 0; k < alpha.size(); ++k) {
    alpha[k] = std::exp(token.log_decay[k]);
  }
  for (std::size_t v = 0; v < static_cast<std::size_t>(k_head_dim); ++v) {
    std::span<double> row = state.subspan(v * k_head_dim, k_head_dim);
    double prediction = 0.0; // (S_{t-1} Diag(alpha) k_hat)[v]
    for (std::size_t k = 0; k < row.size(); ++k) {
      row[k] *= alpha[k];
      prediction += row[k] * token.k_hat[k];
    }
    const double carrier = token.beta * (token.v[v] - prediction); // u_t[v]
    double out = 0.0;
    for (std::size_t k = 0; k < row.size(); ++k) {
      row[k] += carrier * token.k_hat[k];
      out += row[k] * token.q_hat[k];
    }
    output[v] = scale * out;
  }
}

void run_token_recurrence(const HeadTokens& tokens, double scale, std::span<double> state, std::span<double> output,
                          CheckpointSink& checkpoints) {
  for (std::int64_t t = 0; t < tokens.length(); ++t) {
    if (checkpoints.due(t)) {
      checkpoints.record(t, state);
    }
    advance_token(state, tokens.token(t), scale, output.subspan(static_cast<std::size_t>(t * k_head_dim), k_head_dim));
  }
}

PrefillResult run_reference_prefill(const PrefillInputs& inputs, const PrefillOptions& options) {
  const double scale = options.scale;
  return run_prefill(inputs, options,
                     [scale](const HeadTokens& tokens, std::span<double> state, std::span<double> output,
                             CheckpointSink& checkpoints) {
                       run_token_recurrence(tokens, scale, state, output, checkpoints);
                     });
}

} // namespace kda::reference
