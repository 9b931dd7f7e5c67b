// kdajit bench [--cases a,b] [--iters N] [--warmup N] [--cold] [--schedule S [--target T]] [--no-overlap] [--back-to-back]
//              [--pool] [--pool-slots S] [--checkpoint-every P] [--no-state] [--planned] [--profile-range] [--json]
// Times recurrent_kda_prefill on the workloads of peers-h200.md under the
// peers' settings: fresh random inputs, the same buffers every call, 20
// warm-up calls, median of 100 calls timed with CUDA events, bf16 state given
// and updated in place. --cold rotates buffer sets larger than L2 instead.
// Also reports the first call's latency (kernel from the disk cache or NVRTC,
// module load) and, after every workload is timed, the host time of one call
// of the first workload (dispatch overhead: how many driver calls it makes,
// its time outside them, and its time until its first launch, memset, event
// record or stream wait has returned); with
// --back-to-back also each workload's GPU time per call with the calls
// enqueued back to back (the host's time before each call's first launch
// hidden), which tells how much of the per-call figure is host time. --pool
// and --checkpoint-every P time calls with a state pool (the sequences'
// states scattered over twice as many slots, or over S with --pool-slots S)
// and with native checkpoints (with the rows' bytes and their time at the
// memory floor's rate); workloads without a FLA figure print "-";
// --no-state times calls without an initial or a final state (the tokens'
// bytes only; the peers' figures, all with a state, are not compared);
// --planned also times PrefillPlan::run and the replay of a CUDA graph of one
// run, with their host times. --profile-range brackets each workload's timed
// calls with cuProfilerStart / cuProfilerStop, for a profiler's range replay
// (ncu --replay-mode app-range, which takes the range from these calls and
// refuses --profile-from-start): the metrics of
// whole calls whose kernels run at the same time.
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "kdajit/kda.hpp"
#include "runtime/kernel_registry.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/number_options.hpp"
#include "tools/bench_runner.hpp"
#include "tools/bench_workloads.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <string_view>

namespace kda::tools {
namespace {

using runtime::driver_api;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    out.push_back(part);
  }
  return out;
}

} // namespace

int bench_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed =
      parse_args(args,
                 {"--json", "--cold", "--no-overlap", "--back-to-back", "--pool", "--planned", "--profile-range",
                  "--no-state"},
                 {"--cases", "--iters", "--warmup", "--seed", "--schedule", "--target", "--checkpoint-every",
                  "--pool-slots"});
  CallFeatures features;
  features.pool_slots = integer_option(parsed, "--pool-slots", 0, 1, std::int64_t{1} << 24);
  features.pool = parsed.has("--pool") || features.pool_slots > 0;
  features.checkpoint_every = integer_option(parsed, "--checkpoint-every", 0, 1, std::int64_t{1} << 30);
  if (features.checkpoint_every % 16 != 0) {
    throw UsageError("--checkpoint-every takes a positive multiple of 16");
  }
  features.no_state = parsed.has("--no-state");
  if (features.no_state && features.pool) {
    throw UsageError("--no-state excludes --pool and --pool-slots (a pool is the calls' initial state)");
  }
  const bool planned = parsed.has("--planned");
  PrefillOptions options;
  options.schedule = parsed.option("--schedule");
  options.target = parsed.option("--target");
  if (options.target && !options.schedule) {
    throw UsageError("--target needs --schedule (e.g. --schedule sm120_decomposed_c16 --target sm_120a_proxy)");
  }
  options.prepare_overlap = !parsed.has("--no-overlap");
  const int iters = static_cast<int>(integer_option(parsed, "--iters", 100, 1, 1'000'000));
  const int warmup = static_cast<int>(integer_option(parsed, "--warmup", 20, 0, 1'000'000));
  const bool cold = parsed.has("--cold");
  const auto seed = static_cast<std::uint64_t>(integer_option(parsed, "--seed", 2026, 0, std::numeric_limits<std::int64_t>::max()));
  if (!runtime::driver_status().available) {
    err << "kdajit bench: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  runtime::ensure_current_context();
  const runtime::DeviceInfo device = runtime::current_device_info();
  std::vector<const BenchWorkload*> chosen;
  const std::vector<std::string> names = parsed.option("--cases") ? split(*parsed.option("--cases")) : std::vector<std::string>{};
  for (const BenchWorkload& w : bench_workloads()) {
    if (names.empty() || std::find(names.begin(), names.end(), w.name) != names.end()) {
      chosen.push_back(&w);
    }
  }
  if (chosen.empty()) {
    throw UsageError("--cases matches no workload");
  }
  RandomPool pool(seed, std::size_t{1} << 25);
  std::mt19937_64 rng(seed);
  nlohmann::json results = nlohmann::json::array();
  out << fmt::format("kdajit bench on {} ({} L2, {} calls after {} warm-up, median{}{})\n", device.to_string(),
                     cold ? "cold: rotating buffers" : "warm: same buffers", iters, warmup,
                     !features.pool          ? std::string()
                     : features.pool_slots > 0 ? fmt::format("; state pool of {} slots", features.pool_slots)
                                               : std::string("; state pool of 2N slots"),
                     features.checkpoint_every > 0 ? fmt::format("; checkpoints every {} tokens", features.checkpoint_every)
                                                   : std::string());
  if (features.no_state) {
    out << "no state: calls without an initial or a final state; GB/s and xfloor count the tokens' bytes only, "
           "and the peers' figures (with a state) are not compared\n";
  }
  out << fmt::format("{:<20} {:>9} {:>9} {:>8} {:>7} {:>9} {:>7} {:>9} {:>7}  {}\n", "case", "ms", "min ms", "GB/s",
                     "xfloor", "FlashKDA", "speedup", "FLA", "speedup", "kernel");
  double log_sum = 0.0;
  int standard = 0;
  bool first = true;
  // buffer sets per workload: one (warm L2), or with --cold enough to exceed L2
  auto sets_for = [cold, &features](const BenchWorkload& w) {
    return cold ? static_cast<int>(std::clamp<std::int64_t>(400'000'000 / minimal_bytes(w, !features.no_state) + 1, 2, 8))
                : 1;
  };
  for (const BenchWorkload* w : chosen) {
    const std::int64_t bytes = minimal_bytes(*w, !features.no_state);
    Workload wl = make_workload(*w, pool, sets_for(*w), rng, features);
    KDA_CU(cuCtxSynchronize);
    if (first) {
      // First call of the process: kernel from the disk cache (or NVRTC) + module load.
      const auto t0 = std::chrono::steady_clock::now();
      recurrent_kda_prefill(args_for(wl, wl.sets[0]), options);
      KDA_CU(cuCtxSynchronize);
      const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const nlohmann::json stats = KernelRegistry::instance().disk_cache().stats_json();
      out << fmt::format("first call {:.1f} ms (cache: {})\n", first_ms, stats.dump(-1, ' ', false, k_replace_invalid_utf8));
      // where the first workload's choice came from: measured, borrowed or the
      // static preference, and the SM-count table's line (a fallback labelled)
      const std::string route = explain_prefill_route(args_for(wl, wl.sets[0]), options);
      for (std::size_t at = 0, end = 0; at < route.size(); at = end + 1) {
        end = std::min(route.find('\n', at), route.size());
        const std::string_view line(route.data() + at, end - at);
        if (line.starts_with("tuning table") || line.starts_with("SM-count table")) {
          out << "routing: " << line << "\n";
        }
      }
      first = false;
    }
    const Timing t = time_calls(wl, warmup, iters, options, CallPath::eager, parsed.has("--profile-range"));
    const double gbs = static_cast<double>(bytes) / (t.median_ms * 1e-3) / 1e9;
    const double floor_ms = static_cast<double>(bytes) / k_h200_copy_bandwidth * 1e3;
    const double vs_flashkda = w->flashkda_ms / t.median_ms;
    const double vs_fla = w->fla_ms / t.median_ms;
    // the peers' figures are calls with a state; the short-sequence workloads have FlashKDA's only
    const bool fla_known = w->fla_ms > 0.0 && !features.no_state;
    const bool flashkda_known = w->flashkda_ms > 0.0 && !features.no_state;
    if (w->standard && flashkda_known) {
      log_sum += std::log(vs_flashkda);
      ++standard;
    }
    out << fmt::format("{:<20} {:>9.3f} {:>9.3f} {:>8.0f} {:>7.1f} {:>9} {:>7} {:>9} {:>7}  {}\n", w->name,
                       t.median_ms, t.min_ms, gbs, t.median_ms / floor_ms,
                       flashkda_known ? fmt::format("{:.3f}", w->flashkda_ms) : "-",
                       flashkda_known ? fmt::format("{:.2f}", vs_flashkda) : "-",
                       fla_known ? fmt::format("{:.3f}", w->fla_ms) : "-",
                       fla_known ? fmt::format("{:.2f}", vs_fla) : "-", t.schedule);
    if (!t.prepare_overlap.empty()) {
      out << fmt::format("{:<20} prepare overlap {}\n", "", t.prepare_overlap);
    }
    const std::int64_t rows_bytes = features.checkpoint_every > 0 ? checkpoint_bytes(*w, features.checkpoint_every) : 0;
    if (rows_bytes > 0) {
      out << fmt::format("{:<20} checkpoint rows {:.1f} MB, {:.3f} ms at {:.1f} TB/s\n", "", rows_bytes / 1e6,
                         static_cast<double>(rows_bytes) / k_h200_copy_bandwidth * 1e3, k_h200_copy_bandwidth / 1e12);
    }
    std::optional<Timing> planned_timing;
    std::optional<Timing> graph_timing;
    if (planned) {
      planned_timing = time_calls(wl, warmup, iters, options, CallPath::planned);
      graph_timing = time_calls(wl, warmup, iters, options, CallPath::graph);
      out << fmt::format("{:<20} {:>9.3f} {:>9.3f} planned run; {:.3f} {:.3f} graph replay  {}\n", "",
                         planned_timing->median_ms, planned_timing->min_ms, graph_timing->median_ms,
                         graph_timing->min_ms, planned_timing->schedule);
    }
    std::optional<double> back_to_back_ms;
    if (parsed.has("--back-to-back")) {
      back_to_back_ms = time_back_to_back(wl, warmup, iters, options);
      out << fmt::format("{:<20} {:>9.3f} ms per call back to back ({} calls between two events; {:.1f} us less than "
                         "the median)\n",
                         "", *back_to_back_ms, iters, (t.median_ms - *back_to_back_ms) * 1e3);
    }
    results.push_back({{"case", w->name},
                       {"median_ms", t.median_ms},
                       {"min_ms", t.min_ms},
                       {"gb_per_s", gbs},
                       {"x_memory_floor", t.median_ms / floor_ms},
                       {"flashkda_ms", flashkda_known ? nlohmann::json(w->flashkda_ms) : nlohmann::json()},
                       {"speedup_vs_flashkda", flashkda_known ? nlohmann::json(vs_flashkda) : nlohmann::json()},
                       {"fla_ms", fla_known ? nlohmann::json(w->fla_ms) : nlohmann::json()},
                       {"speedup_vs_fla", fla_known ? nlohmann::json(vs_fla) : nlohmann::json()},
                       {"kernel", t.schedule},
                       {"prepare_overlap", t.prepare_overlap},
                       {"checkpoint_bytes", rows_bytes}});
    if (back_to_back_ms) {
      results.back()["back_to_back_ms"] = *back_to_back_ms;
    }
    if (planned_timing) {
      results.back()["planned_median_ms"] = planned_timing->median_ms;
      results.back()["graph_median_ms"] = graph_timing->median_ms;
    }
  }
  if (standard > 0) {
    out << fmt::format("geometric-mean speed-up over FlashKDA on the {} standard workloads: {:.3f}x\n", standard,
                       std::exp(log_sum / standard));
  }
  // Dispatch overhead: host time of one enqueued call of the first workload,
  // kernel ready. Measured after every workload is timed: its ten loops of
  // 200 calls keep the GPU at full load for a second or more, and timings
  // made after them would start from a hotter GPU nearer its power cap.
  {
    const BenchWorkload& w = *chosen.front();
    const Workload wl = make_workload(w, pool, sets_for(w), rng, features);
    const int calls = 200;
    auto host_line = [&](const char* what, CallPath path) {
      const HostTime h = host_time_per_call(wl, calls, options, path);
      out << fmt::format("host time per {} of {}: {:.2f} us ({:.1f} driver calls, {:.2f} us outside them; "
                         "{:.2f} us until its first enqueue returns)\n",
                         what, w.name, h.us, h.driver_calls, h.outside_driver_us, h.until_first_enqueue_us);
    };
    host_line("call (dispatch, enqueue only)", CallPath::eager);
    if (planned) {
      host_line("PrefillPlan::run", CallPath::planned);
      host_line("graph replay", CallPath::graph);
    }
  }
  if (parsed.has("--json")) {
    out << nlohmann::json{{"device", device.to_string()},
                          {"cold_l2", cold},
                          {"state_pool", features.pool},
                          {"state_pool_slots", features.pool_slots},
                          {"checkpoint_every", features.checkpoint_every},
                          {"no_state", features.no_state},
                          {"results", results}}
               .dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  }
  return k_exit_ok;
}

} // namespace kda::tools
