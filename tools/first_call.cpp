// kdajit first-call --workload W [--tiered] [--processes N] [--json]
//
// What a serving process feels when it meets a new shape key: the wall time
// of its first recurrent_kda_prefill call (until the results are on the
// device) in a new process whose CUDA context and inputs exist before the
// clock starts, with an empty kernel cache (kdajit's, and the CUDA compute
// cache NVRTC, nvJitLink and the driver keep) and no bundle. Each of N child
// processes (default 5) gets a fresh cache directory and measures once with
// the tiered JIT (the LLVM tier's token kernel answers; its IR, PTX and cubin
// steps from the cache entry's record) and once without (NVRTC builds the
// routed kernel); the parent prints the medians. The load column is
// cuModuleLoadData, "rest" what the call spends besides (routing, keys,
// arguments, the launch and the kernel), "warm" a second call of the same
// kernel. Then the tiered process waits for its background compile and calls
// once more: the routed kernel must answer (the handover), and its output is
// compared with tier 0's (relative RMS per sequence and head; each tier meets
// spec section 8 in the GPU test matrices). It exits while nothing runs; the
// NVRTC process exits with none started. (A process that exits during a
// background compile waits for it: the tests run that too.)
#include "cache/list_entries.hpp"
#include "compiler/bf16.hpp"
#include "runtime/background_compiles.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/prefill_call.hpp"
#include "tools/args.hpp"
#include "tools/bench_runner.hpp"
#include "tools/bench_workloads.hpp"
#include "tools/child_process.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/json_output.hpp"
#include "tools/number_options.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <ostream>
#include <random>

namespace kda::tools {
namespace {

// The CUDA compute cache of a child whose kdajit cache is `dir` (beside it:
// the kdajit cache refuses a directory holding other files).
std::filesystem::path compute_cache_of(const std::filesystem::path& dir) {
  return dir.string() + "-cuda-compute-cache";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

const BenchWorkload& workload_named(const std::string& name) {
  for (const BenchWorkload& w : bench_workloads()) {
    if (w.name == name) {
      return w;
    }
  }
  throw UsageError(fmt::format("--workload: no workload '{}' (kdajit bench lists them)", name));
}

// The kernel of `schedule` a call of `args` ran, as the registry holds it now.
std::shared_ptr<const PreparedKernel> kernel_that_ran(const PrefillArgs& args, const std::string& schedule) {
  PrefillOptions options;
  options.schedule = schedule;
  const CallSetup s = set_up_call(args, options);
  return KernelRegistry::instance().prepare_if_built(*s.route->schedule, s.route->target, s.route->shape);
}

std::vector<std::uint16_t> download_bf16(const DeviceBytes& b) {
  std::vector<std::uint16_t> host(b.bytes / 2);
  KDA_CU(cuMemcpyDtoH, host.data(), b.ptr, b.bytes);
  return host;
}

// The worst relative RMS difference of b from a over every (token row range
// of a sequence, head): a [tokens][heads][128] bf16.
double worst_rel_rms(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b, const Workload& wl) {
  const int heads = wl.w->heads;
  double worst = 0.0;
  std::int64_t begin = 0;
  for (const std::int64_t length : wl.w->seqlens) {
    for (int h = 0; h < heads; ++h) {
      double diff = 0.0;
      double ref = 0.0;
      for (std::int64_t t = begin; t < begin + length; ++t) {
        for (int i = 0; i < 128; ++i) {
          const std::size_t at = static_cast<std::size_t>((t * heads + h) * 128 + i);
          const double x = bf16_to_float(Bf16{a[at]});
          const double y = bf16_to_float(Bf16{b[at]});
          diff += (x - y) * (x - y);
          ref += x * x;
        }
      }
      const double rel = ref > 0.0 ? std::sqrt(diff / ref) : std::sqrt(diff);
      worst = std::isfinite(rel) ? std::max(worst, rel) : std::numeric_limits<double>::infinity(); // NaN: worst
    }
    begin += length;
  }
  return worst;
}

// One first call in this process (the child's part).
nlohmann::json measure_first_call(const BenchWorkload& w, bool tiered) {
  runtime::ensure_current_context();
  RandomPool pool(2026, std::size_t{1} << 24);
  std::mt19937_64 rng(2026);
  const Workload wl = make_workload(w, pool, 1, rng);
  const PrefillArgs args = args_for(wl, wl.sets.front());
  KDA_CU(cuCtxSynchronize);
  PrefillOptions options;
  options.tiered = tiered;
  const auto start = std::chrono::steady_clock::now();
  const PrefillResult first = recurrent_kda_prefill(args, options);
  KDA_CU(cuCtxSynchronize);
  const double total_ms = ms_since(start);
  const auto again = std::chrono::steady_clock::now();
  (void)recurrent_kda_prefill(args, options); // the same kernel: tier 0 until the routed one is built
  KDA_CU(cuCtxSynchronize);
  const double warm_ms = ms_since(again);
  const std::shared_ptr<const PreparedKernel> k = kernel_that_ran(args, first.schedule);
  nlohmann::json j{{"workload", w.name},
                   {"tiered", tiered},
                   {"tier", first.tier == KernelTier::tier0 ? "tier0" : "routed"},
                   {"schedule", first.schedule},
                   {"target", first.target},
                   {"total_ms", total_ms},
                   {"warm_ms", warm_ms}};
  double steps = 0.0;
  if (k) {
    const nlohmann::json& launch = k->entry->manifest.launch;
    if (launch.contains("tier0_ms")) {
      for (const char* step : {"ir", "ptx", "cubin"}) {
        j[std::string(step) + "_ms"] = launch["tier0_ms"][step];
        steps += launch["tier0_ms"][step].get<double>();
      }
    } else {
      j["nvrtc_ms"] = k->entry->manifest.compile_ms;
      steps += k->entry->manifest.compile_ms;
    }
    j["load_ms"] = KernelRegistry::instance().module_for(*k).load_ms();
    steps += j["load_ms"].get<double>();
  }
  j["rest_ms"] = total_ms - steps;
  if (tiered) { // the handover: the routed kernel answers once it is built
    const std::vector<std::uint16_t> tier0_out = download_bf16(*wl.sets.front().out);
    wait_for_background_builds();
    const PrefillResult handed_over = recurrent_kda_prefill(args, options);
    KDA_CU(cuCtxSynchronize);
    j["after_build_tier"] = handed_over.tier == KernelTier::tier0 ? "tier0" : "routed";
    j["after_build_schedule"] = handed_over.schedule;
    j["tier0_vs_routed_rel_rms"] = worst_rel_rms(tier0_out, download_bf16(*wl.sets.front().out), wl);
  }
  return j;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2.0;
}

} // namespace

int first_call_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed =
      parse_args(args, {"--tiered", "--json", "--child", "--exit-after-first-call"},
                 {"--workload", "--processes", "--cache-dir"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const BenchWorkload& w = workload_named(parsed.option("--workload").value_or("h96_mixed"));
  if (parsed.has("--child")) { // one measurement, in the cache directories the parent made
    const std::optional<std::string> dir = parsed.option("--cache-dir");
    if (!dir) {
      throw UsageError("--child needs --cache-dir");
    }
    // before the driver and the registry are first used: kdajit's cache, and
    // the CUDA compute cache that NVRTC, nvJitLink and the driver keep of
    // their compiles, both empty
    setenv("KDAJIT_CACHE_DIR", dir->c_str(), 1);
    setenv("CUDA_CACHE_PATH", compute_cache_of(*dir).c_str(), 1);
    unsetenv("CUDA_CACHE_DISABLE");
    unsetenv("KDAJIT_BUNDLE_PATH");
    if (!runtime::driver_status().available) {
      err << "kdajit first-call: needs a GPU: " << runtime::driver_status().to_string() << "\n";
      return k_exit_no_device;
    }
    if (parsed.has("--exit-after-first-call")) { // exit while the background compile runs
      runtime::ensure_current_context();
      RandomPool pool(2026, std::size_t{1} << 24);
      std::mt19937_64 rng(2026);
      const Workload wl = make_workload(w, pool, 1, rng);
      PrefillOptions options;
      options.tiered = true;
      const PrefillResult r = recurrent_kda_prefill(args_for(wl, wl.sets.front()), options);
      KDA_CU(cuCtxSynchronize);
      out << nlohmann::json{{"tier", r.tier == KernelTier::tier0 ? "tier0" : "routed"}}.dump() << "\n";
      return k_exit_ok;
    }
    out << measure_first_call(w, parsed.has("--tiered")).dump() << "\n";
    return k_exit_ok;
  }
  if (!runtime::driver_status().available) {
    err << "kdajit first-call: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  const int processes = static_cast<int>(integer_option(parsed, "--processes", 5, 1, 100));
  nlohmann::json runs = nlohmann::json::array();
  std::error_code ignored;
  for (int i = 0; i < processes; ++i) {
    for (const bool tiered : {true, false}) {
      const std::filesystem::path dir =
          std::filesystem::temp_directory_path() / fmt::format("kdajit-first-call-{}-{}-{}", getpid(), i, tiered);
      std::filesystem::remove_all(dir, ignored);
      std::filesystem::remove_all(compute_cache_of(dir), ignored);
      std::vector<std::string> argv = {self_executable(), "first-call", "--child", "--workload", w.name, "--cache-dir",
                                       dir.string()};
      if (tiered) {
        argv.push_back("--tiered");
      }
      const ChildOutcome child = run_child(argv, 300);
      if (!child.exited_ok()) {
        err << fmt::format("kdajit first-call: process {} ({}) {}\n", i, tiered ? "tiered" : "NVRTC",
                           child.describe(300));
        return k_exit_toolchain;
      }
      nlohmann::json r = nlohmann::json::parse(child.out);
      // the tiered process holds both kernels (tier 0's and the routed one),
      // the other one the routed kernel
      r["cache_entries_at_exit"] = cache::list_entries(dir.string()).size();
      // the CUDA compute cache the child started empty (files it wrote: its compiles were real)
      std::size_t compute_cache_files = 0;
      for (auto it = std::filesystem::recursive_directory_iterator(compute_cache_of(dir), ignored);
           it != std::filesystem::recursive_directory_iterator(); it.increment(ignored)) {
        compute_cache_files += it->is_regular_file(ignored) ? 1 : 0;
      }
      r["cuda_compute_cache_files_at_exit"] = compute_cache_files;
      runs.push_back(std::move(r));
      std::filesystem::remove_all(dir, ignored);
      std::filesystem::remove_all(compute_cache_of(dir), ignored);
    }
  }
  runtime::ensure_current_context();
  const runtime::DeviceInfo device = runtime::current_device_info();
  nlohmann::json summary = nlohmann::json::object();
  for (const bool tiered : {true, false}) {
    nlohmann::json m = nlohmann::json::object();
    for (const char* column : {"total_ms", "ir_ms", "ptx_ms", "cubin_ms", "nvrtc_ms", "load_ms", "rest_ms", "warm_ms"}) {
      std::vector<double> values;
      for (const nlohmann::json& r : runs) {
        if (r["tiered"] == tiered && r.contains(column)) {
          values.push_back(r[column].get<double>());
        }
      }
      if (!values.empty()) {
        m[column] = median_of(values);
      }
    }
    summary[tiered ? "tiered" : "nvrtc"] = m;
  }
  if (parsed.has("--json")) {
    out << nlohmann::json{{"device", device.to_string()}, {"workload", w.name}, {"processes", processes},
                          {"median", summary}, {"runs", runs}}
               .dump(2)
        << "\n";
    return k_exit_ok;
  }
  out << fmt::format("first call of {} on {}: a new process each, its context and inputs made before the clock, "
                     "an empty cache, no bundle; median of {} processes (ms)\n",
                     w.name, device.to_string(), processes);
  out << fmt::format("{:<8} {:>9} {:>7} {:>7} {:>7} {:>8} {:>7} {:>8} {:>8}  {}\n", "path", "total", "IR", "PTX",
                     "cubin", "NVRTC", "load", "rest", "warm", "kernel (first call)");
  for (const bool tiered : {true, false}) {
    const nlohmann::json& m = summary.at(tiered ? "tiered" : "nvrtc");
    auto cell = [&](const char* c) { return m.contains(c) ? fmt::format("{:.1f}", m[c].get<double>()) : "-"; };
    std::string kernel;
    for (const nlohmann::json& r : runs) {
      if (r["tiered"] == tiered) {
        kernel = fmt::format("{} on {}", r["schedule"].get<std::string>(), r["target"].get<std::string>());
      }
    }
    out << fmt::format("{:<8} {:>9} {:>7} {:>7} {:>7} {:>8} {:>7} {:>8} {:>8}  {}\n", tiered ? "tiered" : "NVRTC",
                       cell("total_ms"), cell("ir_ms"), cell("ptx_ms"), cell("cubin_ms"), cell("nvrtc_ms"),
                       cell("load_ms"), cell("rest_ms"), cell("warm_ms"), kernel);
  }
  for (const nlohmann::json& r : runs) {
    if (r["tiered"] == true) {
      out << fmt::format("handover: after its background compile, {} ran ({}); tier 0 vs routed output: worst rel "
                         "RMS {:.2e}; {} cache entries at exit\n",
                         r["after_build_schedule"].get<std::string>(), r["after_build_tier"].get<std::string>(),
                         r["tier0_vs_routed_rel_rms"].get<double>(), r["cache_entries_at_exit"].get<std::size_t>());
    }
  }
  return k_exit_ok;
}

} // namespace kda::tools
