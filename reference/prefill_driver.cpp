#include "reference/prefill_driver.hpp"

#include "compiler/errors.hpp"
#include "reference/sequences.hpp"
#include "reference/validate_inputs.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace kda::reference {
namespace {

constexpr double k_poison = std::numeric_limits<double>::quiet_NaN();

std::int64_t state_slot(const PrefillInputs& inputs, std::size_t sequence) {
  if (inputs.ssm_state_indices.empty()) {
    return static_cast<std::int64_t>(sequence);
  }
  return inputs.ssm_state_indices[sequence];
}

void load_state(const StateBuffer& buffer, std::int64_t slot, std::int64_t head, std::int64_t heads,
                std::span<double> state) {
  const std::size_t base = state_index(slot, head, heads, 0, 0);
  for (std::size_t i = 0; i < state.size(); ++i) {
    state[i] = buffer.load(base + i);
  }
}

void store_state(const StateBuffer& buffer, std::int64_t slot, std::int64_t head, std::int64_t heads,
                 std::span<const double> state) {
  const std::size_t base = state_index(slot, head, heads, 0, 0);
  for (std::size_t i = 0; i < state.size(); ++i) {
    buffer.store(base + i, state[i]);
  }
}

} // namespace

PrefillResult run_prefill(const PrefillInputs& inputs, const PrefillOptions& options,
                          const HeadRecurrence& recurrence) {
  const std::vector<SequenceRange> sequences = sequence_ranges(inputs);
  validate_prefill_call(inputs, options, sequences);
  const CheckpointRequest& request = options.checkpoints;
  const bool checkpointing = request.every_n_tokens != 0;
  if (!checkpointing && (!request.rows.empty() || !request.cu_starts.empty())) {
    throw TensorError("checkpoint_every_n_tokens", "is 0 but state_checkpoints or checkpoint_cu_starts are given");
  }

  PrefillResult result;
  const std::int64_t heads = inputs.heads;
  result.sequences = static_cast<std::int64_t>(sequences.size());
  result.heads = heads;
  if (checkpointing) {
    result.checkpoint_cu_starts = resolve_checkpoint_starts(request, sequences, heads);
    result.checkpoints.assign(static_cast<std::size_t>(result.checkpoint_cu_starts.back() * heads * k_state_elements),
                              k_poison);
  }
  result.output.assign(static_cast<std::size_t>(inputs.batch * inputs.tokens * heads * k_head_dim), k_poison);
  result.final_state.assign(static_cast<std::size_t>(result.sequences * heads * k_state_elements), k_poison);
  std::optional<StateBuffer> allocated;
  if (!inputs.initial_state && options.output_final_state) {
    result.allocated_final_state = OwnedState::poisoned(options.final_state_dtype, result.sequences, heads);
    allocated = result.allocated_final_state->view(result.sequences);
  }

  std::vector<double> state(static_cast<std::size_t>(k_state_elements));
  std::vector<double> output;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const SequenceRange& sequence = sequences[i];
    const std::int64_t slot = state_slot(inputs, i);
    for (std::int64_t h = 0; h < heads; ++h) {
      if (inputs.initial_state) {
        load_state(*inputs.initial_state, slot, h, heads, state);
      } else {
        std::fill(state.begin(), state.end(), 0.0);
      }
      CheckpointSink sink;
      if (checkpointing) {
        sink = CheckpointSink(request.every_n_tokens, result.checkpoint_cu_starts[i], h, heads, result.checkpoints,
                              request.rows);
      }
      output.assign(static_cast<std::size_t>(sequence.length * k_head_dim), k_poison);
      recurrence(HeadTokens(inputs, options.lower_bound, sequence, h), state, output, sink);
      if (checkpointing) {
        KDA_INTERNAL_ASSERT(sink.recorded() == checkpoint_row_count(sequence.length, request.every_n_tokens),
                            "recurrence recorded the wrong number of checkpoint rows");
      }
      for (std::int64_t t = 0; t < sequence.length; ++t) {
        const auto row = ((sequence.token_begin + t) * heads + h) * k_head_dim;
        std::copy_n(output.begin() + t * k_head_dim, k_head_dim, result.output.begin() + row);
      }
      const auto state_offset = static_cast<std::ptrdiff_t>(state_index(static_cast<std::int64_t>(i), h, heads, 0, 0));
      std::copy(state.begin(), state.end(), result.final_state.begin() + state_offset);
      // A zero-length sequence leaves its state untouched (spec 8.4).
      if (inputs.initial_state && sequence.length > 0) {
        store_state(*inputs.initial_state, slot, h, heads, state);
      }
      if (allocated) {
        store_state(*allocated, static_cast<std::int64_t>(i), h, heads, state);
      }
    }
  }
  return result;
}

} // namespace kda::reference
