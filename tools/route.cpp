// kdajit route [--cc X.Y --sms N] [--layout fixed|packed] [--state bf16|fp32]
//              [--heads H] [--schedule S] [--nvrtc X.Y]
// Explains which shipped schedule and target a call would get: on a simulated
// device (--cc, --sms) or on the GPU of the current context.
#include "compiler/schedule_library.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/router.hpp"
#include "runtime/selftest_trust.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/number_options.hpp"
#include "tools/shape_options.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {
namespace {

std::pair<int, int> parse_version(const std::string& text, const char* option) {
  const auto dot = text.find('.');
  if (dot == std::string::npos) {
    throw UsageError(fmt::format("{} takes MAJOR.MINOR, got '{}'", option, text));
  }
  return {static_cast<int>(parse_integer(text.substr(0, dot), fmt::format("{}'s major version", option), 1, 99)),
          static_cast<int>(parse_integer(text.substr(dot + 1), fmt::format("{}'s minor version", option), 0, 9))};
}

// The call the route is asked for, from the options (all checked before any
// device is looked at).
ProblemShape problem_from_options(const ParsedArgs& parsed) {
  const ShapeKey shape = shape_from_options(parsed);
  ProblemShape problem;
  problem.layout = shape.layout;
  problem.state_dtype = shape.state_dtype;
  problem.state_in = true;
  problem.state_out = true;
  problem.heads = integer_option(parsed, "--heads", 64, 1, 65535);
  problem.num_seqs = integer_option(parsed, "--sequences", 1, 1, 1 << 24);
  // tokens per sequence (the shape class's length: at most 64 is short)
  const std::int64_t tokens = integer_option(parsed, "--tokens", 1024, 1, std::int64_t{1} << 31);
  problem.batch = problem.layout == LayoutKind::fixed ? problem.num_seqs : 1;
  problem.seq_len = problem.layout == LayoutKind::fixed ? tokens : tokens * problem.num_seqs;
  problem.total_tokens = tokens * problem.num_seqs;
  if (parsed.option("--lower-bound")) {
    problem.lower_bound = real_option(parsed, "--lower-bound", 0.0, -1e9, 1e9);
  }
  problem.state_pool = parsed.has("--pool");
  problem.seq_order = parsed.has("--seq-order");
  problem.checkpoint_interval = integer_option(parsed, "--checkpoint-every", 0, 1, std::int64_t{1} << 30);
  if (problem.checkpoint_interval % 16 != 0) {
    throw UsageError(fmt::format("--checkpoint-every takes a positive multiple of 16, got {}",
                                 problem.checkpoint_interval));
  }
  return problem;
}

} // namespace

int route_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::set<std::string> options = shape_option_names();
  options.insert({"--cc", "--sms", "--heads", "--sequences", "--tokens", "--schedule", "--nvrtc", "--lower-bound", "--family",
                  "--checkpoint-every"});
  const ParsedArgs parsed = parse_args(args, {"--json", "--pool", "--seq-order"}, options);
  const ProblemShape problem = problem_from_options(parsed);
  DeviceDescription device;
  if (const std::optional<std::string> v = parsed.option("--nvrtc")) {
    std::tie(device.nvrtc_major, device.nvrtc_minor) = parse_version(*v, "--nvrtc");
  }
  if (const std::optional<std::string> cc = parsed.option("--cc")) {
    std::tie(device.cc_major, device.cc_minor) = parse_version(*cc, "--cc");
    device.sm_count = static_cast<int>(integer_option(parsed, "--sms", 132, 1, 4096));
  } else if (parsed.option("--sms")) {
    throw UsageError("--sms needs --cc (a simulated device); the current GPU's SM count is its own");
  } else if (runtime::driver_status().available) {
    const runtime::DeviceInfo info = runtime::current_device_info();
    device.cc_major = info.cc_major;
    device.cc_minor = info.cc_minor;
    device.sm_count = info.sm_count;
    if (!parsed.has("--json")) {
      out << info.to_string() << "\n";
    }
  } else {
    err << "kdajit route: no GPU (" << runtime::driver_status().to_string() << "); give --cc X.Y to simulate one\n";
    return k_exit_usage;
  }
  RouteRequest request;
  request.schedule = parsed.option("--schedule");
  if (const std::optional<std::string> family = parsed.option("--family")) {
    request.family = parse_family(*family);
    if (!request.family) {
      err << fmt::format("kdajit route: unknown family '{}' (known: {})\n", *family, family_words());
      return k_exit_usage;
    }
  }
  const std::optional<std::string> table_path =
      tuning_table_path(KernelRegistry::instance().disk_cache().config().root);
  const TuningTable table = routing_tuning_table(table_path);
  request.tuning = &table;
  request.selftest_passed = selftest_trust(table, selftest_environment(device));
  const RouteDecision d = route(available_schedules(), device, problem, request);
  if (parsed.has("--json")) {
    out << nlohmann::json{{"cc", fmt::format("{}.{}", device.cc_major, device.cc_minor)},
                          {"sms", device.sm_count},
                          {"nvrtc", fmt::format("{}.{}", device.nvrtc_major, device.nvrtc_minor)},
                          {"layout", to_string(problem.layout)},
                          {"state", to_string(problem.state_dtype)},
                          {"sequences", problem.num_seqs},
                          {"tokens_per_sequence", problem.num_seqs > 0 ? problem.total_tokens / problem.num_seqs : 0},
                          {"heads", problem.heads},
                          {"state_pool", problem.state_pool},
                          {"seq_order", problem.seq_order},
                          {"checkpoint_every", problem.checkpoint_interval},
                          {"schedule", d.schedule->name},
                          {"target", d.target.name},
                          {"shape", d.shape.canonical()},
                          {"explanation", d.explanation}}
                .dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
    return k_exit_ok;
  }
  out << fmt::format("CC {}.{}, {} SMs, NVRTC {}.{}; {} layout, {} state, {} sequences of {} tokens x {} heads\n",
                     device.cc_major, device.cc_minor, device.sm_count, device.nvrtc_major, device.nvrtc_minor,
                     to_string(problem.layout), to_string(problem.state_dtype), problem.num_seqs,
                     problem.total_tokens / problem.num_seqs, problem.heads)
      << d.explanation << "\n";
  return k_exit_ok;
}

} // namespace kda::tools
