/// \file
/// The gold reference: the operator token by token in fp64 (spec 1.2 - 1.5,
/// 8.5), from the bf16 input values; the working state is never rounded.
#pragma once

#include "reference/checkpoints.hpp"
#include "reference/head_tokens.hpp"
#include "reference/prefill_inputs.hpp"
#include "reference/prefill_result.hpp"

#include <span>

namespace kda::reference {

/// One token of the recurrence on `state` ([v][k], fp64): decay the key
/// columns, predict, update with the delta rule, then write
/// o = scale * S_t * q_hat (the updated state) into `output` (128 values).
void advance_token(std::span<double> state, const PreparedToken& token, double scale, std::span<double> output);

/// advance_token over every token of one (sequence, head), recording each due
/// checkpoint before its token.
void run_token_recurrence(const HeadTokens& tokens, double scale, std::span<double> state, std::span<double> output,
                          CheckpointSink& checkpoints);

/// The full operator, token by token. The initial state (when given) is updated
/// in place; see PrefillResult for what is returned. Throws TensorError.
PrefillResult run_reference_prefill(const PrefillInputs& inputs, const PrefillOptions& options);

} // namespace kda::reference
