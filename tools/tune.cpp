// kdajit tune [--iters N] [--warmup N] [--dry-run] [--json]
// Benchmarks every eligible shipped schedule on the present GPU for one
// representative workload per shape class (how the sequence x head pairs fill
// the SMs) and writes the fastest into the tuning table that routing reads
// (KDAJIT_TUNE_FILE, else <cache dir>/tuning-v1.json), keyed by compute
// capability and SM count, never by device name.
#include "compiler/schedule_library.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/router.hpp"
#include "runtime/tuning_table.hpp"
#include "tools/args.hpp"
#include "tools/bench_runner.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {
namespace {

// The workload of bench_workloads() that represents each shape class on this device.
const BenchWorkload* representative(ShapeClass c, int sm_count) {
  const BenchWorkload* best = nullptr;
  for (const BenchWorkload& w : bench_workloads()) {
    const std::int64_t pairs = static_cast<std::int64_t>(w.seqlens.size()) * w.heads;
    std::int64_t tokens = 0;
    for (std::int64_t l : w.seqlens) {
      tokens += l;
    }
    if (shape_class(pairs, sm_count) == c && tokens <= 32768 && (best == nullptr || w.standard)) {
      best = &w;
    }
  }
  return best;
}

} // namespace

int tune_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--dry-run", "--json"}, {"--iters", "--warmup"});
  const int iters = std::stoi(parsed.option("--iters").value_or("50"));
  const int warmup = std::stoi(parsed.option("--warmup").value_or("10"));
  if (!runtime::driver_status().available) {
    err << "kdajit tune: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  runtime::ensure_current_context();
  const runtime::DeviceInfo info = runtime::current_device_info();
  DeviceDescription device;
  device.cc_major = info.cc_major;
  device.cc_minor = info.cc_minor;
  device.sm_count = info.sm_count;
  const std::string device_key = tuning_device_key(info.cc_major, info.cc_minor, info.sm_count);
  const std::optional<std::string> path = tuning_table_path(KernelRegistry::instance().disk_cache().config().root);
  TuningTable table = path ? TuningTable::load(*path) : TuningTable{};
  RandomPool pool(2026, std::size_t{1} << 24);
  std::mt19937_64 rng(2026);
  nlohmann::json report = nlohmann::json::array();
  out << fmt::format("kdajit tune on {} ({})\n", info.to_string(), device_key);
  for (ShapeClass c : {ShapeClass::few, ShapeClass::one_wave, ShapeClass::two_waves, ShapeClass::many}) {
    const BenchWorkload* w = representative(c, info.sm_count);
    if (w == nullptr) {
      out << fmt::format("{}: no representative workload\n", to_string(c));
      continue;
    }
    Workload wl = make_workload(*w, pool, 1, rng);
    const PrefillArgs probe = args_for(wl, wl.sets[0]);
    ProblemShape problem;
    problem.layout = probe.cu_seqlens.defined() ? LayoutKind::packed : LayoutKind::fixed;
    problem.state_dtype = StatePrecision::bf16;
    problem.state_in = problem.state_out = true;
    problem.heads = w->heads;
    problem.num_seqs = static_cast<int>(w->seqlens.size());
    std::string best;
    double best_ms = 0.0;
    for (const Schedule& s : shipped_schedules()) {
      const TargetChoice t = choose_target(s, device);
      if (!t.target || !ineligibility(s, *t.target, problem).empty()) {
        continue;
      }
      PrefillOptions options;
      options.schedule = s.name;
      const Timing timing = time_calls(wl, warmup, iters, options);
      out << fmt::format("{:<10} {:<20} {:<18} {:8.3f} ms\n", to_string(c), w->name, s.name, timing.median_ms);
      report.push_back({{"class", to_string(c)}, {"workload", w->name}, {"schedule", s.name},
                        {"median_ms", timing.median_ms}});
      if (best.empty() || timing.median_ms < best_ms) {
        best = s.name;
        best_ms = timing.median_ms;
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
    out << nlohmann::json{{"device", device_key}, {"runs", report}, {"table", table.to_json()}}.dump(2) << "\n";
  }
  return k_exit_ok;
}

} // namespace kda::tools
