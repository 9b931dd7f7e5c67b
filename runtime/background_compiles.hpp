/// \file
/// The tiered JIT's background builds (PrefillOptions::tiered): the routed
/// schedule's kernel compiled by NVRTC on a thread of its own, once per
/// (schedule, target, shape key), while eager calls run the LLVM tier's token
/// kernel. A build that fails is remembered and reported once. Process exit
/// waits for the builds in flight (an atexit handler, registered as each
/// build starts, joins them before the statics made until then are
/// destroyed), so exiting mid-compile is clean and the cache never keeps a
/// half-written entry. Before that handler is registered the caller's thread
/// makes every static a build uses: the first build of a process has NVRTC
/// compile a one-line kernel (about 25 ms), and each build keys its kernel
/// (the cache lookup of KernelRegistry::prepare_if_built).
#pragma once

#include "compiler/schedule.hpp"
#include "compiler/shape_key.hpp"
#include "compiler/target.hpp"

#include <optional>
#include <string>

namespace kda {

enum class BackgroundState {
  none,     ///< never started
  building, ///< building now
  built,    ///< in the registry: KernelRegistry::prepare returns it at once
  failed,   ///< the build failed: calls go on with tier 0
};

struct BackgroundStatus {
  BackgroundState state = BackgroundState::none;
  /// The failure, the first time it is asked for after the build failed
  /// (the caller reports it once); empty otherwise.
  std::optional<std::string> report;
};

/// Where the background build of (schedule, target, shape) stands.
BackgroundStatus background_build(const Schedule& schedule, const Target& target, const ShapeKey& shape);

/// Starts the build of (schedule, target, shape) in KernelRegistry::instance()
/// unless one was started before, and says where it stands: `built` at once
/// when the kernel is built already (a bundle, the disk cache: the registry
/// has it now), `failed` when it cannot be keyed (no NVRTC, a target the
/// schedule does not list; reported once by background_build), else
/// `building`. `schedule` must outlive the process's calls (a shipped or
/// path schedule does).
BackgroundState build_in_background(const Schedule& schedule, const Target& target, const ShapeKey& shape);

/// Blocks until every background build started so far has finished (tests,
/// tools; exit does it too).
void wait_for_background_builds();

} // namespace kda
