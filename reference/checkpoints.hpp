/// \file
/// Native checkpoints (spec 1.5): for a sequence of length L and interval P,
/// row r = the state after r*P tokens, r = 0 .. ceil(L/P) - 1 (row 0 = the
/// initial state); the rows of sequence i start at checkpoint_cu_starts[i].
#pragma once

#include "reference/prefill_inputs.hpp"
#include "reference/sequences.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace kda::reference {

/// ceil(length / every_n_tokens): 0 for an empty sequence.
std::int64_t checkpoint_row_count(std::int64_t length, std::int64_t every_n_tokens);

/// checkpoint_cu_starts [N+1] for the given sequences: 0, then running sums of the row counts.
std::vector<std::int64_t> compute_checkpoint_cu_starts(std::span<const SequenceRange> sequences,
                                                       std::int64_t every_n_tokens);
/// The same, for the sequences of `inputs` (validates the layout).
std::vector<std::int64_t> compute_checkpoint_cu_starts(const PrefillInputs& inputs, std::int64_t every_n_tokens);

/// Validates a checkpoint request (interval a positive multiple of 16; given
/// starts start at 0 and match the row counts; the bf16 row buffer is large
/// enough) and returns the starts in force. Throws TensorError.
std::vector<std::int64_t> resolve_checkpoint_starts(const CheckpointRequest& request,
                                                    std::span<const SequenceRange> sequences, std::int64_t heads);

/// Where one (sequence, head) puts its checkpoint rows: the fp64 copy and, when
/// given, the bf16 buffer [Ctot, H, 128, 128].
class CheckpointSink {
public:
  /// A sink that records nothing.
  CheckpointSink() = default;
  CheckpointSink(std::int64_t every_n_tokens, std::int64_t first_row, std::int64_t head, std::int64_t heads,
                 std::span<double> fp64_rows, std::span<Bf16> bf16_rows);

  std::int64_t every_n_tokens() const { return m_every_n_tokens; }
  /// Whether the state before local token t is a checkpoint row.
  bool due(std::int64_t t) const { return m_every_n_tokens > 0 && t % m_every_n_tokens == 0; }
  /// Records `state` ([v][k], fp64) as the state before local token t (due(t) must hold).
  void record(std::int64_t t, std::span<const double> state);
  std::int64_t recorded() const { return m_recorded; }

private:
  std::int64_t m_every_n_tokens = 0;
  std::int64_t m_first_row = 0;
  std::int64_t m_head = 0;
  std::int64_t m_heads = 0;
  std::span<double> m_fp64_rows;
  std::span<Bf16> m_bf16_rows;
  std::int64_t m_recorded = 0;
};

} // namespace kda::reference
