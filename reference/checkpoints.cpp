#include "reference/checkpoints.hpp"

#include "compiler/errors.hpp"
#include "reference/prefill_result.hpp"

#include <fmt/format.h>

namespace kda::reference {

std::int64_t checkpoint_row_count(std::int64_t length, std::int64_t every_n_tokens) {
  KDA_INTERNAL_ASSERT(every_n_tokens > 0, "checkpoint interval must be positive");
  return (length + every_n_tokens - 1) / every_n_tokens;
}

std::vector<std::int64_t> compute_checkpoint_cu_starts(std::span<const SequenceRange> sequences,
                                                       std::int64_t every_n_tokens) {
  if (every_n_tokens <= 0) {
    throw TensorError("checkpoint_every_n_tokens", fmt::format("must be positive, got {}", every_n_tokens));
  }
  std::vector<std::int64_t> starts{0};
  for (const SequenceRange& sequence : sequences) {
    starts.push_back(starts.back() + checkpoint_row_count(sequence.length, every_n_tokens));
  }
  return starts;
}

std::vector<std::int64_t> compute_checkpoint_cu_starts(const PrefillInputs& inputs, std::int64_t every_n_tokens) {
  return compute_checkpoint_cu_starts(sequence_ranges(inputs), every_n_tokens);
}

std::vector<std::int64_t> resolve_checkpoint_starts(const CheckpointRequest& request,
                                                    std::span<const SequenceRange> sequences, std::int64_t heads) {
  const std::int64_t every = request.every_n_tokens;
  if (every <= 0 || every % 16 != 0) {
    throw TensorError("checkpoint_every_n_tokens", fmt::format("must be a positive multiple of 16, got {}", every));
  }
  std::vector<std::int64_t> expected = compute_checkpoint_cu_starts(sequences, every);
  if (!request.cu_starts.empty()) {
    if (request.cu_starts.size() != expected.size()) {
      throw TensorError("checkpoint_cu_starts", fmt::format("expected {} entries (N+1), got {}", expected.size(),
                                                            request.cu_starts.size()));
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (request.cu_starts[i] != expected[i]) {
        throw TensorError("checkpoint_cu_starts",
                          fmt::format("entry {} is {}, expected {} (ceil(length / {}) rows per sequence from 0)", i,
                                      request.cu_starts[i], expected[i], every));
      }
    }
  }
  const std::int64_t needed = expected.back() * heads * k_state_elements;
  if (!request.rows.empty() && static_cast<std::int64_t>(request.rows.size()) < needed) {
    throw TensorError("state_checkpoints", fmt::format("expected at least {} elements ([{}, H = {}, 128, 128]), got {}",
                                                       needed, expected.back(), heads, request.rows.size()));
  }
  return expected;
}

CheckpointSink::CheckpointSink(std::int64_t every_n_tokens, std::int64_t first_row, std::int64_t head,
                               std::int64_t heads, std::span<double> fp64_rows, std::span<Bf16> bf16_rows)
    : m_every_n_tokens(every_n_tokens), m_first_row(first_row), m_head(head), m_heads(heads), m_fp64_rows(fp64_rows),
      m_bf16_rows(bf16_rows) {}

void CheckpointSink::record(std::int64_t t, std::span<const double> state) {
  KDA_INTERNAL_ASSERT(due(t), "checkpoint recorded at a token that is not an interval start");
  KDA_INTERNAL_ASSERT(t / m_every_n_tokens == m_recorded, "checkpoint rows recorded out of order");
  const std::int64_t row = m_first_row + m_recorded;
  const std::size_t base = state_index(row, m_head, m_heads, 0, 0);
  for (std::size_t i = 0; i < state.size(); ++i) {
    m_fp64_rows[base + i] = state[i];
    if (!m_bf16_rows.empty()) {
      m_bf16_rows[base + i] = float_to_bf16(static_cast<float>(state[i]));
    }
  }
  ++m_recorded;
}

} // namespace kda::reference
