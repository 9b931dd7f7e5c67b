#include "reference/sequences.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda::reference {
namespace {

template <typename Offset>
std::vector<SequenceRange> packed_ranges(std::span<const Offset> offsets, const PrefillInputs& inputs) {
  if (inputs.batch != 1) {
    throw TensorError("cu_seqlens", fmt::format("the packed layout needs batch 1, got batch {}", inputs.batch));
  }
  if (offsets.size() < 2) {
    throw TensorError("cu_seqlens", fmt::format("expected at least 2 entries (N+1 with N >= 1), got {}",
                                                offsets.size()));
  }
  if (offsets.front() != 0) {
    throw TensorError("cu_seqlens", fmt::format("must start at 0, got {}", static_cast<std::int64_t>(offsets[0])));
  }
  std::vector<SequenceRange> ranges;
  ranges.reserve(offsets.size() - 1);
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    const auto begin = static_cast<std::int64_t>(offsets[i]);
    const auto end = static_cast<std::int64_t>(offsets[i + 1]);
    if (end < begin) {
      throw TensorError("cu_seqlens", fmt::format("must be non-decreasing, got cu_seqlens[{}] = {} > "
                                                  "cu_seqlens[{}] = {}",
                                                  i, begin, i + 1, end));
    }
    ranges.push_back(SequenceRange{begin, end - begin});
  }
  const auto last = static_cast<std::int64_t>(offsets.back());
  if (last != inputs.tokens) {
    throw TensorError("cu_seqlens", fmt::format("must end at the token count {}, got {}", inputs.tokens, last));
  }
  return ranges;
}

} // namespace

std::vector<SequenceRange> sequence_ranges(const PrefillInputs& inputs) {
  if (inputs.batch < 1) {
    throw TensorError("q", fmt::format("batch must be at least 1, got {}", inputs.batch));
  }
  if (inputs.tokens < 0) {
    throw TensorError("q", fmt::format("token count must not be negative, got {}", inputs.tokens));
  }
  if (const auto* offsets = std::get_if<std::span<const std::int32_t>>(&inputs.cu_seqlens)) {
    return packed_ranges(*offsets, inputs);
  }
  if (const auto* offsets = std::get_if<std::span<const std::int64_t>>(&inputs.cu_seqlens)) {
    return packed_ranges(*offsets, inputs);
  }
  std::vector<SequenceRange> ranges;
  ranges.reserve(static_cast<std::size_t>(inputs.batch));
  for (std::int64_t b = 0; b < inputs.batch; ++b) {
    ranges.push_back(SequenceRange{b * inputs.tokens, inputs.tokens});
  }
  return ranges;
}

} // namespace kda::reference
