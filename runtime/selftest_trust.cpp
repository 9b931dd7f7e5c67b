#include "runtime/selftest_trust.hpp"

#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/generator_identity.hpp"
#include "runtime/tier0_codegen.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <utility>

namespace kda {
namespace {

// The text the schedule's kernel is built from: its CUDA source, or for the
// llvm backend its LLVM IR (a ToolchainError where this process has no LLVM tier).
std::string generated_text(const KernelPlan& plan) {
  return plan.backend == Backend::llvm ? runtime::tier0_ir(plan).text : emit_cuda(plan).text;
}

} // namespace

SelftestEnvironment selftest_environment(const DeviceDescription& d) {
  SelftestEnvironment env;
  env.device = tuning_device_key(d.cc_major, d.cc_minor, d.sm_count);
  env.driver_version = runtime::driver_status().driver_version;
  env.nvrtc = fmt::format("{}.{}", d.nvrtc_major, d.nvrtc_minor);
  return env;
}

SelftestRecord selftest_identity(const Schedule& schedule, const Target& target, const SelftestEnvironment& env) {
  SelftestRecord r;
  r.device = env.device;
  r.schedule = schedule.name;
  r.target = target.name;
  r.source_sha256 = emitted_source_sha256(generated_text(lower(validate(schedule, target), ShapeKey{})));
  r.driver_version = env.driver_version;
  r.nvrtc = env.nvrtc;
  r.kdajit = KDAJIT_VERSION;
  return r;
}

SelftestTrust selftest_trust(const TuningTable& table, const SelftestEnvironment& env) {
  // one answer per (schedule, target) for the life of the trust (a route asks several times)
  auto answers = std::make_shared<std::map<std::pair<std::string, std::string>, bool>>();
  return [&table, env, answers](const Schedule& schedule, const Target& target) {
    const auto key = std::pair{schedule.name, target.name};
    if (const auto it = answers->find(key); it != answers->end()) {
      return it->second;
    }
    bool any = false;
    for (const SelftestRecord& r : table.selftests()) {
      any = any || (r.device == env.device && r.schedule == schedule.name && r.target == target.name && r.pass);
    }
    const SelftestRecord* r = nullptr;
    try {
      r = any ? table.find_selftest(selftest_identity(schedule, target, env)) : nullptr;
    } catch (const ToolchainError&) {
      // an llvm-backend schedule in a process without the LLVM tier: its
      // record cannot be matched, so it is not trusted
    }
    return answers->emplace(key, r != nullptr && r->pass).first->second;
  };
}

} // namespace kda
