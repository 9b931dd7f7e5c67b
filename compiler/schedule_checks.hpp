/// \file
/// The checks `validate` runs, one function per concern. Each appends what it
/// finds to `sink` and never throws.
#pragma once

#include "compiler/errors.hpp"
#include "compiler/schedule.hpp"
#include "compiler/smem_layout.hpp"
#include "compiler/target.hpp"

#include <vector>

namespace kda {

/// Name, chunk size, m_tile, head dim, decomposition shape, eligibility lists.
void check_schedule_fields(const Schedule& schedule, std::vector<Diagnostic>& sink);

/// Every listed target is known; `target` is listed; the family is allowed on it.
void check_target(const Schedule& schedule, const Target& target, std::vector<Diagnostic>& sink);

/// The eligibility lower_bound range is one the chunk size and anchor make safe in BF16.
void check_lower_bound_range(const Schedule& schedule, std::vector<Diagnostic>& sink);

/// State residence and TMEM columns against the family and the target.
void check_state_and_tmem(const Schedule& schedule, const Target& target, std::vector<Diagnostic>& sink);

/// Phases, pipeline and warp roles of one kernel.
void check_kernel_structure(const Schedule& schedule, const KernelDecl& kernel, const Target& target,
                            std::vector<Diagnostic>& sink);

/// `prepare_overlap`: a decomposed design, positive model numbers, a share in (0, 1].
void check_prepare_overlap(const Schedule& schedule, std::vector<Diagnostic>& sink);

/// Each buffer declaration on its own: name, shape, alignment, lifetime, alias, pinned offset, only_with.
void check_buffer_decls(const KernelDecl& kernel, std::vector<Diagnostic>& sink);

/// No two buffers share bytes while both are live, and every byte sharing is a declared alias.
void check_smem_aliasing(const KernelDecl& kernel, const SmemLayout& layout, std::vector<Diagnostic>& sink);

/// The layout's total fits the target's SMEM per block.
void check_smem_budget(const KernelDecl& kernel, const SmemLayout& layout, const Target& target,
                       std::vector<Diagnostic>& sink);

/// The name of phase `index` of `kernel` ("end" one past the last).
std::string phase_name(const KernelDecl& kernel, int index);

/// 240640 -> "240,640".
std::string with_thousands(std::int64_t value);

} // namespace kda
