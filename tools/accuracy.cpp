// kdajit accuracy [--state fp32|bf16] [--schedule S] [--json]
// The six accuracy cases of ../shared/bench/peers-h200.md on the GPU: relative
// RMS error of the output and of the final state against the fp64 token
// reference, over the whole tensor (as the peers' figures are), beside
// FlashKDA's and FLA's numbers on the H200, and the ratio to FLA's (issue 4
// asks for at most 1.1x FLA's on each case).
#include "runtime/cuda_driver.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/shape_options.hpp"
#include "tools/verify_run.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ostream>
#include <sstream>

namespace kda::tools {
namespace {

struct AccuracyCase {
  const char* name;
  VerifySpec spec;
  double flashkda_out, flashkda_state, fla_out, fla_state;
};

VerifySpec fixed_spec(std::int64_t tokens, std::int64_t heads, VerifyGate gate) {
  VerifySpec s;
  s.seqlens.clear();
  s.batch = 1;
  s.tokens = tokens;
  s.heads = heads;
  s.gate = gate;
  return s;
}

std::vector<AccuracyCase> accuracy_cases() {
  VerifySpec packed;
  packed.seqlens = {17, 33, 65, 300, 1000};
  packed.heads = 4;
  return {
      {"fixed 2048, H4, standard", fixed_spec(2048, 4, VerifyGate::standard), 5.7e-3, 4.8e-3, 4.1e-3, 3.0e-3},
      {"packed [17,33,65,300,1000], H4", packed, 5.7e-3, 5.1e-3, 4.1e-3, 2.9e-3},
      {"fixed 8192, H2", fixed_spec(8192, 2, VerifyGate::standard), 5.7e-3, 5.1e-3, 4.1e-3, 3.0e-3},
      {"g = -8, A_log = 0", fixed_spec(2048, 4, VerifyGate::minus8), 8.2e-3, 7.3e-3, 5.5e-3, 4.6e-3},
      {"g = +8, A_log = 0", fixed_spec(2048, 4, VerifyGate::plus8), 5.2e-3, 5.2e-3, 3.8e-3, 2.3e-3},
      {"g = 0, dt_bias U[-8,8]", fixed_spec(2048, 4, VerifyGate::bias8), 6.9e-3, 6.1e-3, 4.9e-3, 3.9e-3},
  };
}

} // namespace

int accuracy_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--json"}, {"--state", "--schedule"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const bool fp32 = state_option(parsed, StatePrecision::fp32) == StatePrecision::fp32;
  if (!runtime::driver_status().available) {
    err << "kdajit accuracy: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  const bool json = parsed.has("--json");
  std::ostringstream text; // the table, printed without --json
  nlohmann::json rows = nlohmann::json::array();
  text << fmt::format("{:<32} {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>6} {:>6}  {}\n", "case (state " +
                         std::string(fp32 ? "fp32)" : "bf16)"),
                     "out", "state", "FKDA out", "FKDA st", "FLA out", "FLA st", "/FLA o", "/FLA s", "kernel");
  bool all_within = true;
  std::uint64_t seed = 11;
  for (AccuracyCase c : accuracy_cases()) {
    c.spec.fp32_state = fp32;
    c.spec.seed = seed++;
    c.spec.options.schedule = parsed.option("--schedule");
    const VerifyFigures f = run_verification(c.spec);
    const double ro = f.whole_output / c.fla_out;
    const double rs = f.whole_state / c.fla_state;
    all_within = all_within && ro <= 1.1 && rs <= 1.1 && f.pass;
    text << fmt::format("{:<32} {:>9.2e} {:>9.2e} | {:>9.1e} {:>9.1e} | {:>9.1e} {:>9.1e} | {:>6.2f} {:>6.2f}  {}\n",
                       c.name, f.whole_output, f.whole_state, c.flashkda_out, c.flashkda_state, c.fla_out, c.fla_state,
                       ro, rs, f.schedule);
    rows.push_back({{"case", c.name}, {"output_rel_rms", f.whole_output}, {"state_rel_rms", f.whole_state},
                    {"fla_output", c.fla_out}, {"fla_state", c.fla_state}, {"ratio_output", ro},
                    {"ratio_state", rs}, {"spec_pass", f.pass}, {"kernel", f.schedule}});
  }
  text << (all_within ? "every case within 1.1x FLA's error\n" : "not every case is within 1.1x FLA's error\n");
  if (json) {
    out << nlohmann::json{{"fp32_state", fp32}, {"cases", rows}, {"within_1_1x_fla", all_within}}.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  } else {
    out << text.str();
  }
  return k_exit_ok;
}

} // namespace kda::tools
