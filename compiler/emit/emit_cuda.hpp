/// \file
/// emit_cuda(): KernelPlan -> CudaSource. Emits a constexpr plan header
/// (constants, SMEM offsets and pitches, the workspace record, the parameter
/// struct with static_asserts on its layout) and one entry point per plan
/// entry that calls its template fragment. Reads only the plan; the same plan
/// gives the same bytes.
#pragma once

#include "compiler/emit/cuda_source.hpp"
#include "compiler/emit/source_writer.hpp"
#include "compiler/kernel_plan.hpp"

namespace kda {

/// The CUDA source of a plan of the cuda backend (InternalError for an llvm
/// plan: compiler/ir/ writes those).
CudaSource emit_cuda(const KernelPlan& plan);

/// The `namespace kda_plan { ... }` block.
void emit_plan_header(const KernelPlan& plan, SourceWriter& out);

/// `kda::wgmma_m64n<N>k16_rs(d, a, b_desc, accumulate)` for each N of the
/// plan: D[N/8][4] (+)= A (registers, bf16) x B (SMEM descriptor, bf16).
void emit_wgmma_ops(const KernelPlan& plan, SourceWriter& out);

/// The extern "C" entry points.
void emit_entries(const KernelPlan& plan, SourceWriter& out);

/// Version of the emitter's output format (part of the generator identity).
inline constexpr const char* k_emitter_version = "4";

} // namespace kda
