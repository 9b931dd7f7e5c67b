// kdajit tune [--iters N] [--warmup N] [--timeout SECONDS] [--dry-run] [--json]
// Runs `kdajit selftest` first (the schedules the device never verified),
// then benchmarks every eligible shipped schedule that is verified on such
// hardware or passed selftest here, on the present GPU on the bench
// workloads of each shape class (how the sequence x head pairs fill the SMs;
// workloads of at most 32,768 tokens) and writes the schedule with the lowest
// geometric mean of the median times into the tuning table that routing reads
// (KDAJIT_TUNE_FILE, else <cache dir>/tuning-v1.json), keyed by compute
// capability and SM count, never by device name. Every workload of a class
// counts: one workload alone let a 1 % difference (noise) pick a schedule
// that is slower on the class's other workloads.
#include "compiler/schedule_library.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/router.hpp"
#include "runtime/tuning_table.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/number_options.hpp"
#include "tools/bench_runner.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/selftest.hpp"
#include "runtime/selftest_trust.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <ostream>
#include <vector>

namespace kda::tools {
namespace {

ProblemShape problem_of(const BenchWorkload& w, const Workload& wl) {
  const PrefillArgs probe = args_for(wl, wl.sets[0]);
  ProblemShape problem;
  problem.layout = probe.cu_seqlens.defined() ? LayoutKind::packed : LayoutKind::fixed;
  problem.state_dtype = StatePrecision::bf16;
  problem.state_in = problem.state_out = true;
  problem.heads = w.heads;
  problem.num_seqs = static_cast<int>(w.seqlens.size());
  return problem;
}

} // namespace

int tune_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--dry-run", "--json"}, {"--iters", "--warmup", "--timeout"});
  const int timeout_s = static_cast<int>(integer_option(parsed, "--timeout", 300, 1, 86400));
  const int iters = static_cast<int>(integer_option(parsed, "--iters", 50, 1, 1'000'000));
  const int warmup = static_cast<int>(integer_option(parsed, "--warmup", 10, 0, 1'000'000));
  if (!runtime::driver_status().available) {
    err << "kdajit tune: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  const DeviceDescription device = current_device_description();
  const runtime::DeviceInfo info = runtime::current_device_info();
  const std::string device_key = tuning_device_key(info.cc_major, info.cc_minor, info.sm_count);
  const std::optional<std::string> path = tuning_table_path(KernelRegistry::instance().disk_cache().config().root);
  TuningTable table = path ? TuningTable::load(*path) : TuningTable{};
  const std::vector<SelftestCandidate> untested = selftest_candidates(device, false, std::nullopt);
  if (!untested.empty()) {
    out << fmt::format("selftest first: {} schedule(s) never run on such hardware\n", untested.size());
    run_selftests(untested, device, timeout_s, table, out);
  }
  const SelftestTrust passed = selftest_trust(table, selftest_environment(device));
  RandomPool pool(2026, std::size_t{1} << 24);
  std::mt19937_64 rng(2026);
  nlohmann::json report = nlohmann::json::array();
  out << fmt::format("kdajit tune on {} ({})\n", info.to_string(), device_key);
  for (ShapeClass c : all_shape_classes()) {
    // at most 32,768 tokens per workload, so that a tune stays short
    const std::vector<const BenchWorkload*> workloads = workloads_in_class(c, info.sm_count, 32768);
    if (workloads.empty()) {
      out << fmt::format("{}: no bench workload in this class\n", to_string(c));
      continue;
    }
    // schedule -> sum of log(median ms) and the workloads it ran (eligible for all)
    std::map<std::string, std::pair<double, std::size_t>> logs;
    for (const BenchWorkload* w : workloads) {
      Workload wl = make_workload(*w, pool, 1, rng);
      const ProblemShape problem = problem_of(*w, wl);
      for (const Schedule& s : available_schedules()) {
        const TargetChoice t = choose_target(s, device);
        if (!t.target || !ineligibility(s, *t.target, problem).empty() ||
            !(verified_on_hardware(s, *t.target) || passed(s, *t.target))) {
          continue;
        }
        PrefillOptions options;
        options.schedule = s.name;
        const Timing timing = time_calls(wl, warmup, iters, options);
        out << fmt::format("{:<10} {:<20} {:<18} {:8.3f} ms\n", to_string(c), w->name, s.name, timing.median_ms);
        report.push_back({{"class", to_string(c)}, {"workload", w->name}, {"schedule", s.name},
                          {"median_ms", timing.median_ms}});
        logs[s.name].first += std::log(timing.median_ms);
        logs[s.name].second += 1;
      }
    }
    std::string best;
    double best_geomean = 0.0;
    for (const auto& [name, sum] : logs) {
      if (sum.second != workloads.size()) {
        continue; // not eligible for every workload of the class
      }
      const double geomean = std::exp(sum.first / static_cast<double>(sum.second));
      out << fmt::format("{:<10} geometric mean over {} workload(s) {:<18} {:8.3f} ms\n", to_string(c),
                         workloads.size(), name, geomean);
      if (best.empty() || geomean < best_geomean) {
        best = name;
        best_geomean = geomean;
      }
    }
    if (!best.empty()) {
      table.set(device_key, c, best);
      out << fmt::format("{:<10} -> {}\n", to_string(c), best);
    }
  }
  if (!parsed.has("--dry-run")) {
    if (!path) {
      err << "kdajit tune: the cache is memory-only and KDAJIT_TUNE_FILE is not set: nowhere to write the table\n";
      return k_exit_cache;
    }
    table.save(*path);
    out << "tuning table written to " << *path << "\n";
  }
  if (parsed.has("--json")) {
    out << nlohmann::json{{"device", device_key}, {"runs", report}, {"table", table.to_json()}}.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  }
  return k_exit_ok;
}

} // namespace kda::tools
