/// \file
/// The deterministic SMEM planner.
#pragma once

#include "compiler/schedule.hpp"
#include "compiler/smem_layout.hpp"

namespace kda {

/// Assigns every buffer of `kernel.smem` an offset inside its region, in
/// declaration order: a pinned `offset` is taken as given (and checked later);
/// an aliasing buffer starts where the buffer it aliases starts; any other
/// buffer goes at the first suitably aligned byte past everything placed so
/// far in its region. The stage region is one ring slot, repeated
/// `pipeline.stages` times and rounded to its largest alignment; the shared
/// region follows the ring. Declaration problems are not reported here
/// (`check_buffer_decls` does that); the planner only has to stay well defined.
SmemLayout plan_smem(const KernelDecl& kernel);

} // namespace kda
