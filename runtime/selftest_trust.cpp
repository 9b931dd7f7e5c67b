#include "runtime/selftest_trust.hpp"

#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/generator_identity.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <utility>

namespace kda {

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
  r.source_sha256 = emitted_source_sha256(emit_cuda(lower(validate(schedule, target), ShapeKey{})).text);
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
    const SelftestRecord* r = any ? table.find_selftest(selftest_identity(schedule, target, env)) : nullptr;
    return answers->emplace(key, r != nullptr && r->pass).first->second;
  };
}

} // namespace kda
