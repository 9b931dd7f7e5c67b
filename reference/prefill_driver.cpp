#include "reference/prefill_driver.hpp"

#include "compiler/errors.hpp"
#include "reference/sequences.hpp"
#include "reference/validate_inputs.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
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

// Whether every sequence has a state slot of its own (always without a pool).
bool distinct_slots(const PrefillInputs& inputs, std::size_t sequences) {
  if (inputs.ssm_state_indices.empty()) {
    return true;
  }
  std::vector<std::int64_t> slots(inputs.ssm_state_indices.begin(),
                                  inputs.ssm_state_indices.begin() + static_cast<std::ptrdiff_t>(sequences));
  std::sort(slots.begin(), slots.end());
  return std::adjacent_find(slots.begin(), slots.end()) == slots.end();
}

// Threads for `pairs` pairs: the machine's, at most one per 4 pairs and at most 32.
int worker_threads(std::int64_t pairs) {
  const auto hardware = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::clamp<std::int64_t>(std::min(hardware, pairs / 4), 1, 32));
}

// Calls pair_work(p, state, output) for p in [0, pairs) on `threads` threads
// (each with its own state and output buffers, pairs taken in turn from a
// shared counter); the first exception a pair throws is rethrown here, after
// every thread has stopped.
void run_in_parallel(std::int64_t pairs, int threads,
                     const std::function<void(std::int64_t, std::vector<double>&, std::vector<double>&)>& pair_work) {
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto worker = [&] {
    std::vector<double> state(static_cast<std::size_t>(k_state_elements));
    std::vector<double> output;
    for (std::int64_t p = next++; p < pairs && !failed; p = next++) {
      try {
        pair_work(p, state, output);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) {
          first_error = std::current_exception();
        }
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  worker();
  for (std::thread& t : pool) {
    t.join();
  }
  if (first_error) {
    std::rethrow_exception(first_error);
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

  // One (sequence, head) pair: everything it reads and writes is its own (its
  // state slot, output rows, final state and checkpoint rows), so pairs run
  // on several threads with the same results bit for bit, unless two
  // sequences name one pool slot (then the later one reads what the earlier
  // one stored, and the pairs run in order).
  auto run_pair = [&](std::size_t i, std::int64_t h, std::vector<double>& state, std::vector<double>& output) {
    const SequenceRange& sequence = sequences[i];
    const std::int64_t slot = state_slot(inputs, i);
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
  };
  const std::int64_t pairs = static_cast<std::int64_t>(sequences.size()) * heads;
  const int threads = distinct_slots(inputs, sequences.size()) ? worker_threads(pairs) : 1;
  run_in_parallel(pairs, threads, [&](std::int64_t pair, std::vector<double>& state, std::vector<double>& output) {
    run_pair(static_cast<std::size_t>(pair / heads), pair % heads, state, output);
  });
  return result;
}

} // namespace kda::reference
