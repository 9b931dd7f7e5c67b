/// \file
/// The part of a prefill call that does not depend on how one (sequence, head)
/// is computed: validation, sequence ranges, state load/store (in place, pools,
/// allocated final state), output scatter and checkpoint placement. Both the
/// token reference and the CPU chunked implementation run through it.
#pragma once

#include "reference/checkpoints.hpp"
#include "reference/head_tokens.hpp"
#include "reference/prefill_inputs.hpp"
#include "reference/prefill_result.hpp"

#include <functional>
#include <span>

namespace kda::reference {

/// Advances `state` (fp64 [128 v][128 k], the initial state on entry) over all
/// tokens of one (sequence, head); writes the output rows [length][128] into
/// `output` and records every due checkpoint into `checkpoints`.
using HeadRecurrence =
    std::function<void(const HeadTokens& tokens, std::span<double> state, std::span<double> output,
                       CheckpointSink& checkpoints)>;

/// Validates the call, then runs `recurrence` on every (sequence, head) and
/// applies the state I/O semantics of spec 1.4 / 1.5. Throws TensorError.
/// The pairs run on several threads at once (the results are the same bit
/// for bit), so `recurrence` must be callable concurrently; in order, on one
/// thread, when two sequences name the same pool slot.
PrefillResult run_prefill(const PrefillInputs& inputs, const PrefillOptions& options,
                          const HeadRecurrence& recurrence);

} // namespace kda::reference
