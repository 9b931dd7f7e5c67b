/// \file
/// The sequences of a call: fixed layout (B sequences of T tokens) or packed
/// layout (cu_seqlens, B = 1), as token ranges into the flattened [B*T] rows.
#pragma once

#include "reference/prefill_inputs.hpp"

#include <cstdint>
#include <vector>

namespace kda::reference {

struct SequenceRange {
  std::int64_t token_begin = 0; // first row in the flattened [B*T] token rows
  std::int64_t length = 0;      // may be 0 in the packed layout
};

/// The sequence ranges of `inputs`, in sequence order. Validates cu_seqlens
/// (N+1 >= 2 entries, starts at 0, non-decreasing, ends at T) and the packed
/// layout's B = 1; throws TensorError naming the argument.
std::vector<SequenceRange> sequence_ranges(const PrefillInputs& inputs);

} // namespace kda::reference
