/// \file
/// The deterministic SMEM planner.
#pragma once

#include <string_view>

#include "compiler/schedule.hpp"
#include "compiler/smem_layout.hpp"

namespace kda {

/// Assigns every buffer of `kernel.smem` an offset inside its region, in
/// declaration order: a pinned `offset` is taken as given (and checked later);
/// an aliasing buffer starts where the buffer it aliases starts; any other
/// buffer goes at the first suitably aligned byte past everything placed so
/// far in its region. The stage region is one ring slot, repeated
/// `pipeline.stages` times and rounded to its largest alignment; the shared
/// region follows the ring. A buffer declared `only_with` a feature is
/// placed only when `with_checkpoints` grants it ("checkpoints"); otherwise it
/// is absent (0 bytes at offset 0) and the others are placed as if it were not
/// declared. Validation plans with every feature (the largest layout).
/// Declaration problems are not reported here (`check_buffer_decls` does
/// that); the planner only has to stay well defined.
SmemLayout plan_smem(const KernelDecl& kernel, bool with_checkpoints = true);

/// The one feature an SMEM buffer may be declared `only_with`.
inline constexpr std::string_view k_checkpoints_feature = "checkpoints";

} // namespace kda
