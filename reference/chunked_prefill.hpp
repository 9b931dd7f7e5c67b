/// \file
/// The CPU chunked implementation of the operator in fp64 (spec 2): the same
/// inputs, layouts and state semantics as run_reference_prefill, computed
/// chunk by chunk (never through the token loop), so the two can be compared.
#pragma once

#include "reference/checkpoints.hpp"
#include "reference/chunk_operands.hpp"
#include "reference/head_tokens.hpp"
#include "reference/prefill_inputs.hpp"
#include "reference/prefill_result.hpp"

#include <span>

namespace kda::reference {

/// All chunks of one (sequence, head) in order, recording each due checkpoint
/// at its chunk boundary.
void run_chunked_recurrence(const HeadTokens& tokens, double scale, const ChunkConfig& config,
                            std::span<double> state, std::span<double> output, CheckpointSink& checkpoints);

/// The full operator, chunk by chunk. Throws TensorError for bad inputs, also
/// when `config` is anchored and no lower bound is given, or when checkpoints
/// are requested at an interval the chunk size does not divide.
PrefillResult run_chunked_prefill(const PrefillInputs& inputs, const PrefillOptions& options,
                                  const ChunkConfig& config);

} // namespace kda::reference
