// kdajit compile [--schedule S]... [--target T]... [--all] [--state ...] [--layout ...] [--json]
// Fills the kernel cache: compiles (or finds) each (schedule, target) for one
// shape key. --all: every shipped schedule that has a generator, for every
// target it lists. Without --target, a schedule's own targets.
#include "compiler/lower/family_recipe.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/kernel_registry.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/schedule_inputs.hpp"
#include "tools/shape_options.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ostream>
#include <sstream>

namespace kda::tools {


namespace {

std::vector<std::string> options_named(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == name) {
      out.push_back(args[i + 1]);
    }
  }
  return out;
}

} // namespace

int compile_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::set<std::string> options = shape_option_names();
  options.insert({"--schedule", "--target"});
  const ParsedArgs parsed = parse_args(args, shape_flags({"--all", "--json"}), options);
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const bool all = parsed.has("--all");
  std::vector<Schedule> schedules;
  for (const std::string& s : options_named(args, "--schedule")) {
    schedules.push_back(schedule_by_name_or_file(s));
  }
  if (all) {
    schedules.insert(schedules.end(), shipped_schedules().begin(), shipped_schedules().end());
  }
  if (schedules.empty()) {
    throw UsageError("'compile' needs --schedule S (repeatable) or --all");
  }
  std::vector<Target> targets;
  for (const std::string& t : options_named(args, "--target")) {
    targets.push_back(*target_option(t));
  }
  const ShapeKey shape = shape_from_options(parsed);
  const bool json = parsed.has("--json");
  std::ostringstream text; // the report, printed without --json
  nlohmann::json results = nlohmann::json::array();
  int failures = 0;
  int not_written = 0; // compiled but not in the disk cache
  const cache::CacheConfig& config = KernelRegistry::instance().disk_cache().config();
  for (const Schedule& s : schedules) {
    try {
      find_family_recipe(s);
    } catch (const ScheduleError& e) {
      if (!all) {
        throw;
      }
      text << fmt::format("{}: skipped ({})\n", s.name, e.diagnostics().front().message);
      results.push_back({{"schedule", s.name}, {"skipped", e.diagnostics().front().message}});
      continue;
    }
    std::vector<Target> for_schedule = targets;
    if (for_schedule.empty()) {
      for (const std::string& name : s.targets) {
        for_schedule.push_back(*find_target(name));
      }
    }
    for (const Target& target : for_schedule) {
      const auto start = std::chrono::steady_clock::now();
      try {
        const cache::CacheStats& stats = KernelRegistry::instance().disk_cache().stats();
        const auto before = stats.get(cache::Statistic::compile);
        const auto failed_before = stats.get(cache::Statistic::publish_failed);
        const std::shared_ptr<const PreparedKernel> k = KernelRegistry::instance().prepare(s, target, shape);
        const bool compiled = stats.get(cache::Statistic::compile) > before;
        // on disk: found there, or compiled and written (a memory-only cache writes nothing)
        const bool written = config.root.has_value() && stats.get(cache::Statistic::publish_failed) == failed_before;
        not_written += (compiled && !written) ? 1 : 0;
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::string resources;
        for (const cache::EntryPoint& ep : k->entry->manifest.entry_points) {
          resources += fmt::format("{}{}: {} regs, {} B spills{}{}", resources.empty() ? "" : "; ",
                                   ep.name.substr(ep.name.rfind('_') + 1), ep.resources.value("registers", 0),
                                   ep.resources.value("spill_store_bytes", 0),
                                   ep.resources.value("wgmma_serialized", false) ? ", wgmma serialized" : "",
                                   ep.resources.value("wgmma_wait_injected", false) ? ", wgmma wait injected" : "");
        }
        text << fmt::format("{} {} {} {}: {} in {:.0f} ms ({}){}\n", k->key.short_id(), s.name, target.name,
                            shape.canonical(), compiled ? "compiled" : "cached", ms, resources,
                            compiled && !written ? "; NOT written to the disk cache" : "");
        results.push_back({{"schedule", s.name},
                           {"target", target.name},
                           {"shape", shape.canonical()},
                           {"key", k->key.hex()},
                           {"compiled", compiled},
                           {"in_disk_cache", !compiled || written},
                           {"ms", ms}});
      } catch (const ScheduleError& e) {
        ++failures;
        text << fmt::format("{} {}: cannot generate\n{}", s.name, target.name, diagnostics_text(e));
        results.push_back({{"schedule", s.name}, {"target", target.name}, {"error", e.what()}});
      }
    }
  }
  std::string cache_problem;
  if (not_written > 0) {
    cache_problem = config.root ? fmt::format("{} compiled kernel(s) could not be written to the disk cache {}",
                                              not_written, *config.root)
                                : fmt::format("{} compiled kernel(s) are in memory only: {}", not_written,
                                              config.memory_only_warning);
  }
  if (json) {
    nlohmann::json doc{{"results", results}};
    if (!cache_problem.empty()) {
      doc["cache_error"] = cache_problem;
    }
    out << doc.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  } else {
    out << text.str();
  }
  if (failures > 0) {
    return k_exit_invalid_schedule;
  }
  if (!cache_problem.empty()) {
    err << "kdajit compile: " << cache_problem << "\n";
    return k_exit_cache;
  }
  return k_exit_ok;
}

} // namespace kda::tools
