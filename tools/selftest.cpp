// kdajit selftest [--all] [--schedule S] [--timeout SECONDS] [--dry-run] [--json]
// kdajit selftest --child SCHEDULE --target T   (what each child runs)
// Trust on first use: a family never run on such hardware (tcgen05 on CC
// 10.x) is taken by routing only after its schedules passed here. Each
// candidate runs in a child process of this executable with a time limit, so
// that a hang, a crash or a sticky CUDA error is a recorded failure; the
// child checks four small calls against the CPU fp64 reference (spec section
// 8's tolerances: packed and fixed, bf16 and fp32 state, the gate at -8 and
// +8) and times one benchmark workload. Results go to the local tuning table
// (KDAJIT_TUNE_FILE, else <cache dir>/tuning-v1.json), keyed by device,
// driver, NVRTC, kdajit version and the schedule's source hash.
#include "tools/selftest.hpp"

#include "compiler/errors.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/selftest_trust.hpp"
#include "tools/args.hpp"
#include "tools/bench_runner.hpp"
#include "tools/child_process.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/json_output.hpp"
#include "tools/number_options.hpp"
#include "tools/verify_run.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace kda::tools {
namespace {

bool has_generator(const Schedule& s) {
  try {
    find_family_recipe(s);
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

// The child's cases: small calls against the CPU reference, then one timed workload.
std::vector<VerifySpec> child_cases(const std::string& schedule, const std::string& target) {
  std::vector<VerifySpec> cases(4);
  cases[0].seqlens = {300, 17, 0, 1000, 65};
  cases[0].heads = 4;
  cases[1].seqlens.clear();
  cases[1].batch = 2;
  cases[1].tokens = 200;
  cases[1].heads = 3;
  cases[1].fp32_state = true;
  cases[2].seqlens = {64, 1, 129};
  cases[2].heads = 2;
  cases[2].gate = VerifyGate::minus8;
  cases[3] = cases[2];
  cases[3].gate = VerifyGate::plus8;
  cases[3].fp32_state = true;
  std::uint64_t seed = 31;
  for (VerifySpec& c : cases) {
    c.options.schedule = schedule;
    c.options.target = target;
    c.seed = seed++;
  }
  return cases;
}

const char* gate_name(VerifyGate g) {
  return g == VerifyGate::minus8 ? "g -8" : g == VerifyGate::plus8 ? "g +8" : g == VerifyGate::bias8 ? "bias 8"
                                                                                                      : "standard";
}

std::string case_name(const VerifySpec& c) {
  return fmt::format("{} H{} {} {}",
                     c.seqlens.empty() ? fmt::format("fixed {}x{}", c.batch, c.tokens)
                                       : fmt::format("packed {} seqs", c.seqlens.size()),
                     c.heads, c.fp32_state ? "fp32" : "bf16", gate_name(c.gate));
}

// The cases and the timed workload; a kdajit error (a compile that fails, a
// refused call) ends them as a failure that says what it was.
void run_child_cases(const std::string& schedule, const std::string& target, bool& pass, std::string& detail);

int child_main(const std::string& schedule, const std::string& target, std::ostream& out) {
  bool pass = true;
  std::string detail;
  try {
    run_child_cases(schedule, target, pass, detail);
  } catch (const Error& e) {
    pass = false;
    detail += fmt::format("{}{}", detail.empty() ? "" : "; ", e.what());
  }
  out << nlohmann::json{{"pass", pass}, {"detail", detail}}.dump(-1, ' ', false, k_replace_invalid_utf8) << "\n";
  return pass ? k_exit_ok : k_exit_verification_failed;
}

void run_child_cases(const std::string& schedule, const std::string& target, bool& pass, std::string& detail) {
  for (const VerifySpec& c : child_cases(schedule, target)) {
    const VerifyFigures f = run_verification(c);
    detail += fmt::format("{}{}: output {:.2e}, state {:.2e}{}", detail.empty() ? "" : "; ", case_name(c),
                          f.worst_output, f.worst_state, f.pass ? "" : " (outside the tolerances)");
    pass = pass && f.pass;
  }
  const auto& all = bench_workloads();
  const auto w = std::find_if(all.begin(), all.end(), [](const BenchWorkload& b) { return b.name == "h8_fixed_2048"; });
  if (pass && w != all.end()) {
    RandomPool pool(2026, std::size_t{1} << 22);
    std::mt19937_64 rng(2026);
    const Workload wl = make_workload(*w, pool, 1, rng);
    PrefillOptions options;
    options.schedule = schedule;
    options.target = target;
    const Timing t = time_calls(wl, 3, 10, options);
    detail += fmt::format("; bench {} {:.3f} ms", w->name, t.median_ms);
  }
}

} // namespace

DeviceDescription current_device_description() {
  runtime::ensure_current_context();
  const runtime::DeviceInfo info = runtime::current_device_info();
  DeviceDescription d;
  d.cc_major = info.cc_major;
  d.cc_minor = info.cc_minor;
  d.sm_count = info.sm_count;
  try {
    const runtime::NvrtcVersion v = runtime::NvrtcCompiler().version();
    d.nvrtc_major = v.major;
    d.nvrtc_minor = v.minor;
  } catch (const ToolchainError&) {
    // no NVRTC: route as the toolkit this was built with would (nvrtc 13.0)
  }
  return d;
}

std::vector<SelftestCandidate> selftest_candidates(const DeviceDescription& device, bool all,
                                                   const std::optional<std::string>& only) {
  std::vector<SelftestCandidate> out;
  for (const Schedule& s : available_schedules()) {
    if ((only && s.name != *only) || !has_generator(s)) {
      continue;
    }
    const TargetChoice t = choose_target(s, device);
    if (t.target && (all || only || !verified_on_hardware(s, *t.target))) {
      out.push_back({&s, *t.target});
    }
    if ((all || only) && !t.target) { // a schedule this device cannot run natively: through its proxy, if any
      for (const Target& stand_in : all_targets()) {
        const TargetChoice proxy = stand_in.tcgen05_proxy || !stand_in.proxy_of.empty()
                                       ? explicit_target(s, stand_in.name, device)
                                       : TargetChoice{};
        if (proxy.target) {
          out.push_back({&s, *proxy.target});
        }
      }
    }
  }
  return out;
}

SelftestOutcome read_child_outcome(const ChildOutcome& child, int timeout_s) {
  if (!child.started || child.timed_out || child.signal != 0 || (child.exit_code != 0 && child.exit_code != 8)) {
    return {false, "the child " + child.describe(timeout_s)};
  }
  std::string last;
  std::istringstream lines(child.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      last = line;
    }
  }
  const nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  if (!j.is_object() || !j.contains("pass") || !j["pass"].is_boolean() || !j.contains("detail") ||
      !j["detail"].is_string()) {
    return {false, fmt::format("the child ({}) printed no result line", child.describe(timeout_s))};
  }
  const bool pass = j["pass"].get<bool>() && child.exit_code == 0;
  return {pass, j["detail"].get<std::string>()};
}

int run_selftests(const std::vector<SelftestCandidate>& candidates, const DeviceDescription& device, int timeout_s,
                  TuningTable& table, std::ostream& out) {
  const SelftestEnvironment env = selftest_environment(device);
  int failed = 0;
  for (const SelftestCandidate& c : candidates) {
    SelftestRecord record;
    try {
      record = selftest_identity(*c.schedule, c.target, env);
    } catch (const ToolchainError& e) { // an llvm-backend schedule without the LLVM tier: nothing to record
      ++failed;
      out << fmt::format("{} on {}: FAIL (not run, not recorded: {})\n", c.schedule->name, c.target.name, e.what());
      continue;
    }
    const ChildOutcome child = run_child(
        {self_executable(), "selftest", "--child", c.schedule->name, "--target", c.target.name}, timeout_s);
    const SelftestOutcome o = read_child_outcome(child, timeout_s);
    record.pass = o.pass;
    record.detail = o.detail;
    table.record_selftest(record);
    failed += o.pass ? 0 : 1;
    out << fmt::format("{} on {}: {} ({})\n", c.schedule->name, c.target.name, o.pass ? "pass" : "FAIL", o.detail);
  }
  return failed;
}

int selftest_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed =
      parse_args(args, {"--all", "--dry-run", "--json"}, {"--schedule", "--timeout", "--child", "--target"});
  const int timeout_s = static_cast<int>(integer_option(parsed, "--timeout", 300, 1, 86400));
  if (parsed.option("--target") && !parsed.option("--child")) {
    throw UsageError("--target is for --child (the target of a candidate is the router's)");
  }
  if (parsed.option("--child") && !parsed.option("--target")) {
    throw UsageError("--child needs --target");
  }
  if (parsed.has("--all") && parsed.option("--schedule")) {
    throw UsageError("--all and --schedule exclude each other");
  }
  if (!runtime::driver_status().available) {
    err << "kdajit selftest: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  if (const std::optional<std::string> child = parsed.option("--child")) {
    return child_main(*child, *parsed.option("--target"), out);
  }
  const DeviceDescription device = current_device_description();
  const std::string device_key = tuning_device_key(device.cc_major, device.cc_minor, device.sm_count);
  const std::vector<SelftestCandidate> candidates =
      selftest_candidates(device, parsed.has("--all"), parsed.option("--schedule"));
  if (parsed.option("--schedule") && candidates.empty()) {
    err << fmt::format("kdajit selftest: no schedule named '{}' (shipped or on KDAJIT_SCHEDULE_PATH) with a generator runs on "
                       "CC {}.{}\n",
                       *parsed.option("--schedule"), device.cc_major, device.cc_minor);
    return k_exit_usage;
  }
  const std::optional<std::string> path = tuning_table_path(KernelRegistry::instance().disk_cache().config().root);
  if (!path && !parsed.has("--dry-run")) {
    err << "kdajit selftest: the cache is memory-only and KDAJIT_TUNE_FILE is not set: nowhere to record results\n";
    return k_exit_cache;
  }
  TuningTable table = path ? TuningTable::load(*path) : TuningTable{};
  out << fmt::format("kdajit selftest on {} ({}): {} schedule(s){}\n", runtime::current_device_info().to_string(),
                     device_key, candidates.size(),
                     candidates.empty() ? " (every schedule this device runs is verified on such hardware; --all "
                                          "runs them anyway)"
                                        : "");
  const int failed = run_selftests(candidates, device, timeout_s, table, out);
  if (!parsed.has("--dry-run")) {
    table.save(*path);
    out << "results recorded in " << *path << "\n";
  }
  if (parsed.has("--json")) {
    nlohmann::json records = nlohmann::json::array();
    for (const SelftestRecord& r : table.selftests()) {
      if (r.device == device_key) {
        records.push_back({{"schedule", r.schedule}, {"target", r.target}, {"pass", r.pass}, {"detail", r.detail}});
      }
    }
    out << nlohmann::json{{"device", device_key}, {"records", records}}.dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  }
  return failed == 0 ? k_exit_ok : k_exit_verification_failed;
}

} // namespace kda::tools
