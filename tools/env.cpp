// kdajit env [--json]: what this process would use: versions (kdajit,
// generator, NVRTC, driver), devices with CC, SM count and where a call would
// be routed, the cache and lock directories with every candidate's verdict,
// the environment variables kdajit reads that are set, and the bundles.
#include "cache/cache_config.hpp"
#include "cache/eviction.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/device_info.hpp"
#include "runtime/generator_identity.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/nvrtc_library.hpp"
#include "runtime/router.hpp"
#include "runtime/selftest_trust.hpp"
#include "runtime/tuning_table.hpp"
#include "runtime/cuda_driver.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <ostream>

namespace kda::tools {
namespace {

// Variables kdajit reads besides the cache's own (cache_environment_variables).
constexpr const char* k_other_variables[] = {
    "KDAJIT_TUNE_FILE",   "KDAJIT_MAX_BYTES",     "KDAJIT_PREPARE_LEAD",  "KDAJIT_PREPARE_STREAMS",
    "KDAJIT_SPLIT_ORDER", "KDAJIT_NVRTC_LIBRARY", "KDAJIT_BUNDLE_PATH",   "KDAJIT_DISABLE_JIT",
    "KDAJIT_SCHEDULE_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_INJECTION64_PATH"};

nlohmann::json variables_in_effect() {
  nlohmann::json vars = nlohmann::json::object();
  auto note = [&vars](const std::string& name) {
    if (const char* v = std::getenv(name.c_str()); v != nullptr) {
      vars[name] = v;
    }
  };
  for (std::string_view name : cache::cache_environment_variables()) {
    note(std::string(name));
  }
  for (const char* name : k_other_variables) {
    note(name);
  }
  return vars;
}

nlohmann::json device_json(const runtime::DeviceInfo& info, const std::string& nvrtc) {
  DeviceDescription d;
  d.cc_major = info.cc_major;
  d.cc_minor = info.cc_minor;
  d.sm_count = info.sm_count;
  if (const std::size_t dot = nvrtc.find('.'); dot != std::string::npos) {
    d.nvrtc_major = std::stoi(nvrtc.substr(0, dot));
    d.nvrtc_minor = std::stoi(nvrtc.substr(dot + 1));
  }
  ProblemShape problem; // a fixed-layout call of one sequence, 64 heads, bf16 state
  problem.heads = 64;
  problem.num_seqs = 1;
  problem.state_in = true;
  problem.state_out = true;
  const TuningTable table = routing_tuning_table(tuning_table_path(KernelRegistry::instance().disk_cache().config().root));
  nlohmann::json j{{"ordinal", info.ordinal},
                   {"name", info.name},
                   {"cc", fmt::format("{}.{}", info.cc_major, info.cc_minor)},
                   {"sms", info.sm_count},
                   {"smem_per_block_optin", info.max_smem_optin_per_block}};
  try {
    RouteRequest request;
    request.tuning = &table;
    request.selftest_passed = selftest_trust(table, selftest_environment(d));
    const RouteDecision r = route(available_schedules(), d, problem, request);
    j["routes_to"] = {{"schedule", r.schedule->name}, {"target", r.target.name}};
  } catch (const Error& e) {
    j["routes_to"] = {{"error", e.what()}};
  }
  return j;
}

} // namespace

int env_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  (void)err;
  const ParsedArgs parsed = parse_args(args, {"--json"}, {});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  nlohmann::json j;
  j["kdajit"] = {{"version", KDAJIT_VERSION}, {"generator_id", generator_id()}, {"emitter", k_emitter_version}};
  const cache::CurrentIdentity identity = KernelRegistry::instance().current_identity();
  std::string nvrtc_problem;
  try {
    j["nvrtc"] = {{"version", KernelRegistry::instance().nvrtc_version()},
                  {"library", runtime::NvrtcLibrary::get().path()}};
  } catch (const Error& e) {
    nvrtc_problem = e.what();
    j["nvrtc"] = {{"error", nvrtc_problem}};
  }
  const runtime::DriverStatus& driver = runtime::driver_status();
  j["driver"] = {{"available", driver.available}, {"status", driver.to_string()}};
  nlohmann::json devices = nlohmann::json::array();
  if (driver.available) {
    for (const runtime::DeviceInfo& info : runtime::list_devices()) {
      devices.push_back(device_json(info, identity.nvrtc_version));
    }
  }
  j["devices"] = devices;
  j["cache"] = KernelRegistry::instance().disk_cache().config().to_json();
  j["environment"] = variables_in_effect();
  j["bundles"] = nlohmann::json::array();
  for (const auto& [path, entries] : KernelRegistry::instance().bundles()) {
    j["bundles"].push_back({{"path", path}, {"entries", entries}});
  }
  j["jit"] = KernelRegistry::instance().jit_enabled();
  if (parsed.has("--json")) {
    out << j.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
    return k_exit_ok;
  }
  out << fmt::format("kdajit {} (generator {})\n", KDAJIT_VERSION, generator_id());
  out << "NVRTC: "
      << (nvrtc_problem.empty() ? fmt::format("{} ({})", identity.nvrtc_version, runtime::NvrtcLibrary::get().path())
                                : nvrtc_problem)
      << "\n";
  out << "driver: " << driver.to_string() << "\n";
  for (const auto& d : devices) {
    out << fmt::format("device {}: {}, CC {}, {} SMs; a call routes to {}\n", d["ordinal"].get<int>(),
                       d["name"].get<std::string>(), d["cc"].get<std::string>(), d["sms"].get<int>(),
                       d["routes_to"].contains("schedule")
                           ? d["routes_to"]["schedule"].get<std::string>() + " on " +
                                 d["routes_to"]["target"].get<std::string>()
                           : d["routes_to"]["error"].get<std::string>());
  }
  const cache::CacheConfig& config = KernelRegistry::instance().disk_cache().config();
  out << "cache: " << (config.root ? *config.root : "memory-only (" + config.memory_only_warning + ")") << "\n";
  for (const auto& c : j["cache"]["root_candidates"]) {
    out << "  candidate " << c.dump(-1, ' ', false, k_replace_invalid_utf8) << "\n";
  }
  out << "locks: " << (config.lock_dir ? *config.lock_dir : "none (" + config.lock_note + ")") << "\n";
  out << "environment:";
  if (j["environment"].empty()) {
    out << " (no kdajit variable set)";
  }
  out << "\n";
  for (const auto& [name, value] : j["environment"].items()) {
    out << "  " << name << "=" << value.get<std::string>() << "\n";
  }
  out << "bundles:";
  if (j["bundles"].empty()) {
    out << " none (KDAJIT_BUNDLE_PATH, register_kernel_bundle())";
  }
  out << "\n";
  for (const auto& b : j["bundles"]) {
    out << "  " << b["path"].get<std::string>() << " (" << b["entries"].get<std::size_t>() << " kernels)\n";
  }
  out << "JIT: " << (j["jit"].get<bool>() ? "on" : "off (KDAJIT_DISABLE_JIT=1)") << "\n";
  return k_exit_ok;
}

} // namespace kda::tools
