// kdajit cache explain SCHEDULE --target T [--state bf16|fp32] [--layout fixed|packed] [--cache-dir DIR] [--json]
// The cache key a compile of (schedule, target, shape key) would have, field
// by field, and whether the cache holds it; if not, the nearest entry (fewest
// differing key fields) and how each differing field differs: why a lookup
// missed.
#include "cache/list_entries.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/kernel_plan.hpp"
#include "compiler/lower.hpp"
#include "runtime/generator_identity.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cache_target.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/schedule_inputs.hpp"
#include "tools/shape_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ostream>

namespace kda::tools {
namespace {

struct FieldDiff {
  std::string field;
  std::string entry;
  std::string wanted;
};

std::vector<std::pair<std::string, std::string>> named_fields(const cache::CacheKeyFields& f) {
  return {{"layout_version", f.layout_version}, {"abi_version", f.abi_version},
          {"generator_id", f.generator_id},     {"schedule_id", f.schedule_id},
          {"shape_key", f.shape_key},           {"target", f.target},
          {"nvrtc_version", f.nvrtc_version},   {"nvrtc_build", f.nvrtc_build},
          {"source_sha256", f.source_sha256},   {"options", fmt::format("{}", fmt::join(f.options, " "))}};
}

std::vector<FieldDiff> differences(const cache::CacheKeyFields& entry, const cache::CacheKeyFields& wanted) {
  std::vector<FieldDiff> out;
  const auto a = named_fields(entry);
  const auto b = named_fields(wanted);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].second != b[i].second) {
      out.push_back({a[i].first, a[i].second, b[i].second});
    }
  }
  return out;
}

} // namespace

int cache_explain_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::set<std::string> options = shape_option_names();
  options.insert({"--target", "--cache-dir"});
  const ParsedArgs parsed = parse_args(args, shape_flags({"--json"}), options);
  if (parsed.positional.size() != 1) {
    throw UsageError("'cache explain' takes one schedule (a shipped name or a file) and --target T");
  }
  const std::optional<Target> target = target_option(parsed.option("--target"));
  if (!target) {
    throw UsageError("'cache explain' needs --target T");
  }
  const Schedule schedule = schedule_by_name_or_file(parsed.positional.front());
  const ShapeKey shape = shape_from_options(parsed);
  const KernelPlan plan = lower(validate(schedule, *target), shape);
  const cache::CacheKeyFields wanted =
      kernel_key_fields(schedule, *target, shape, KernelRegistry::instance().nvrtc_identity(),
                        runtime::default_compile_options(*target), plan.abi.version,
                        emitted_source_sha256(emit_cuda(plan).text));
  const cache::CacheKey key = cache::make_cache_key(wanted);
  const CacheTarget where = cache_target(parsed);
  std::vector<cache::ListedEntry> entries;
  if (where.root) {
    entries = cache::list_entries(*where.root);
  }
  const cache::ListedEntry* present = nullptr;
  const cache::ListedEntry* nearest = nullptr;
  std::vector<FieldDiff> nearest_diff;
  for (const cache::ListedEntry& e : entries) {
    if (!e.manifest) {
      continue;
    }
    if (e.manifest->key == key.hex()) {
      present = &e;
      break;
    }
    std::vector<FieldDiff> d = differences(e.manifest->key_fields, wanted);
    if (nearest == nullptr || d.size() < nearest_diff.size()) {
      nearest = &e;
      nearest_diff = std::move(d);
    }
  }
  if (parsed.has("--json")) {
    nlohmann::json fields = nlohmann::json::object();
    for (const auto& [name, value] : named_fields(wanted)) {
      fields[name] = value;
    }
    nlohmann::json j{{"key", key.hex()}, {"key_fields", fields}, {"present", present != nullptr}};
    if (present != nullptr) {
      j["dir"] = present->dir;
    } else if (nearest != nullptr) {
      nlohmann::json diffs = nlohmann::json::array();
      for (const FieldDiff& d : nearest_diff) {
        diffs.push_back({{"field", d.field}, {"entry", d.entry}, {"wanted", d.wanted}});
      }
      j["nearest"] = {{"key", nearest->manifest->key},
                      {"schedule", nearest->manifest->launch.value("schedule", std::string("?"))},
                      {"differences", diffs}};
    }
    out << j.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  } else {
    out << fmt::format("{} on {}, shape {}: key {}\n", schedule.name, target->name, shape.canonical(), key.hex());
    for (const auto& [name, value] : named_fields(wanted)) {
      out << fmt::format("  {:<15} {}\n", name, value);
    }
    if (!where.root) {
      out << "the kernel cache is memory-only (" << where.memory_only_reason << ")\n";
    } else if (present != nullptr) {
      out << "present: " << present->dir << "\n";
    } else if (nearest == nullptr) {
      out << "absent: the cache " << *where.root << " holds no entry\n";
    } else {
      out << fmt::format("absent; nearest entry {} ({} on {}), {} key field{}:\n", nearest->manifest->key.substr(0, 16),
                         nearest->manifest->launch.value("schedule", std::string("?")),
                         nearest->manifest->key_fields.target, nearest_diff.size(),
                         nearest_diff.size() == 1 ? " differs" : "s differ");
      for (const FieldDiff& d : nearest_diff) {
        out << fmt::format("  {:<15} entry {}\n  {:<15} wanted {}\n", d.field, d.entry, "", d.wanted);
      }
    }
  }
  (void)err;
  return present != nullptr ? k_exit_ok : k_exit_not_found;
}

} // namespace kda::tools
