/// \file
/// Host-side checks of one prefill call's shapes and options, before any work.
#pragma once

#include "reference/prefill_inputs.hpp"
#include "reference/sequences.hpp"

#include <span>

namespace kda::reference {

/// Checks tensor sizes, scalars, the state (or pool and its indices) against
/// the sequences; throws TensorError naming the first bad argument.
/// Checkpoint metadata is checked by resolve_checkpoint_starts.
void validate_prefill_call(const PrefillInputs& inputs, const PrefillOptions& options,
                           std::span<const SequenceRange> sequences);

} // namespace kda::reference
