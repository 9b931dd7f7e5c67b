/// \file
/// The CPU emulation of a generated kernel's numerics, configured from the
/// kernel plan's NumericsPlan: the same constants the emitter writes into the
/// kernel (ANCHOR_ROWS, INVERSE_BLOCK) and the schedule's bf16 rounding points
/// (issue 5, item 4: the kernel and the emulation are driven by one plan).
#pragma once

#include "compiler/kernel_plan.hpp"
#include "reference/chunk_operands.hpp"

namespace kda::reference {

/// Throws InternalError for a plan the reference cannot emulate (an anchor
/// other than C / 2, an inverse block that does not divide the chunk in a
/// power of two).
ChunkConfig emulation_config(const NumericsPlan& numerics, int chunk_size);

} // namespace kda::reference
