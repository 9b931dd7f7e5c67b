// kdajit emit --schedule S --target T [--state bf16|fp32] [--layout fixed|packed] [--plan]
//             [--backend cuda|llvm]
// Prints the generated CUDA source, or for a schedule of the llvm backend
// (the `token` family) its LLVM IR and the PTX LLVM's NVPTX backend writes
// for T (or, with --plan, the lowered plan's entry points and launch
// geometry). S is a shipped schedule name or a file; --backend, when given,
// must be the schedule's.
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/tier0_codegen.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/schedule_inputs.hpp"
#include "tools/shape_options.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {

int emit_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  (void)err;
  std::set<std::string> options = shape_option_names();
  options.insert({"--schedule", "--target", "--backend"});
  const ParsedArgs parsed = parse_args(args, shape_flags({"--plan", "--json"}), options);
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const std::optional<std::string> schedule_name = parsed.option("--schedule");
  const std::optional<Target> target = target_option(parsed.option("--target"));
  if (!schedule_name || !target) {
    throw UsageError("'emit' needs --schedule S and --target T");
  }
  const Schedule schedule = schedule_by_name_or_file(*schedule_name);
  if (const std::optional<std::string> backend = parsed.option("--backend")) {
    const std::optional<Backend> asked = parse_backend(*backend);
    if (!asked) {
      throw UsageError(fmt::format("unknown backend '{}' (known: {})", *backend, backend_words()));
    }
    if (*asked != schedule.backend) {
      throw UsageError(fmt::format("schedule {} is written by the '{}' backend, not '{}'", schedule.name,
                                   to_string(schedule.backend), *backend));
    }
  }
  try {
    const KernelPlan plan = lower(validate(schedule, *target), shape_from_options(parsed));
    if (plan.backend == Backend::llvm && !parsed.has("--plan")) {
      const std::string ir = runtime::tier0_ir(plan).text;
      const std::string ptx = runtime::tier0_ptx(plan).ptx;
      if (parsed.has("--json")) {
        const nlohmann::json j{{"entry", plan.token->entry_name}, {"llvm_version", runtime::tier0_llvm_version()},
                               {"ir", ir}, {"ptx", ptx}};
        out << j.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
      } else {
        out << ir << fmt::format("\n// PTX for {} (LLVM {} NVPTX backend)\n", target->name,
                                 runtime::tier0_llvm_version())
            << ptx;
      }
      return k_exit_ok;
    }
    if (parsed.has("--json")) {
      const CudaSource source = plan.backend == Backend::cuda ? emit_cuda(plan) : CudaSource{};
      nlohmann::json entries = nlohmann::json::array();
      for (const EntryPlan& e : plan.entries) {
        entries.push_back({{"entry", e.entry_name},
                           {"threads", e.launch.threads},
                           {"dynamic_smem", e.launch.dynamic_smem},
                           {"stages", e.pipeline.stages},
                           {"programmatic_launch", e.launch.programmatic}});
      }
      nlohmann::json j{{"file_name", source.file_name}, {"entries", entries}};
      if (!parsed.has("--plan")) {
        j["source"] = source.text;
      }
      out << j.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
      return k_exit_ok;
    }
    if (parsed.has("--plan")) {
      for (const EntryPlan& e : plan.entries) {
        out << fmt::format("{}: {} threads, {} B dynamic SMEM, {} stage(s){}\n", e.entry_name, e.launch.threads,
                           e.launch.dynamic_smem, e.pipeline.stages,
                           e.launch.programmatic ? ", programmatic launch (starts as the kernel before it ends)" : "");
      }
      return k_exit_ok;
    }
    out << emit_cuda(plan).text;
  } catch (const ScheduleError& e) {
    out << schedule.source << " on " << target->name << ": cannot generate\n" << diagnostics_text(e);
    return k_exit_invalid_schedule;
  }
  return k_exit_ok;
}

} // namespace kda::tools
