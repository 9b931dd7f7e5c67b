// The tiered JIT's choice of kernel for an eager call (prefill_call.hpp,
// prepare_tiered_call_kernel).
#include "compiler/errors.hpp"
#include "runtime/background_compiles.hpp"
#include "runtime/prefill_call.hpp"
#include "runtime/tier0_codegen.hpp"

#include <iostream>
#include <mutex>

namespace kda {
namespace {

// the token kernel with its state in SMEM: rolled loops, compiled in ~30 ms
// where the unrolled register kernel takes ~250 ms (docs/bench/archive/LOG.md)
constexpr const char* k_tier0_schedule = "token_llvm_smem";

} // namespace

CallKernel prepare_tiered_call_kernel(const CallSetup& s, double lower_bound, const PrefillOptions& options) {
  const RouteDecision& routed = *s.route;
  if (routed.schedule->family == Family::token || !runtime::tier0_available()) {
    return prepare_call_kernel(s, lower_bound);
  }
  const BackgroundStatus status = background_build(*routed.schedule, routed.target, routed.shape);
  if (status.state == BackgroundState::built) {
    return prepare_call_kernel(s, lower_bound); // the registry has it: no compile
  }
  PrefillOptions tier0 = options;
  tier0.schedule = k_tier0_schedule;
  tier0.family.reset();
  tier0.target.reset();
  const RouteDecision* baseline = nullptr;
  try {
    baseline = &route_memo(s.device->description, s.problem, tier0);
  } catch (const TensorError&) {
    return prepare_call_kernel(s, lower_bound); // tier 0 cannot take this call: wait for the routed kernel
  }
  BackgroundStatus now = status;
  if (status.state == BackgroundState::none) {
    // the first call of this kernel: built already (a bundle, the disk cache)?
    const BackgroundState started = build_in_background(*routed.schedule, routed.target, routed.shape);
    if (started == BackgroundState::built) {
      return prepare_call_kernel(s, lower_bound); // the registry has it: no compile
    }
    if (started == BackgroundState::failed) {
      now = background_build(*routed.schedule, routed.target, routed.shape); // its report, once
    }
  }
  if (now.report) {
    std::cerr << "kdajit: warning: " << *now.report << "; calls of this shape go on with the LLVM tier's "
              << k_tier0_schedule << "\n";
  }
  CallSetup setup = s;
  setup.route = baseline;
  CallKernel k;
  try {
    k = prepare_call_kernel(setup, lower_bound);
  } catch (const ToolchainError& e) {
    // tier 0 cannot be built here (no nvJitLink, say): the routed kernel, as without tiers
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::cerr << "kdajit: warning: the LLVM tier's " << k_tier0_schedule << " cannot be built (" << e.what()
                << "); tiered calls wait for the routed kernel\n";
    });
    return prepare_call_kernel(s, lower_bound);
  }
  k.tier = KernelTier::tier0;
  return k;
}

} // namespace kda
