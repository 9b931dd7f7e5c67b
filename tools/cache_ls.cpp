// kdajit cache ls [--target T] [--schedule S] [--stale] [--cache-dir DIR] [--json]: the entries of the
// kernel cache directory (--stale: only those of another generator or toolchain, which gc --orphans removes).
#include "cache/eviction.hpp"
#include "cache/list_entries.hpp"
#include "runtime/kernel_registry.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cache_target.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {

int cache_ls_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  (void)err;
  const ParsedArgs parsed = parse_args(args, {"--json", "--stale"}, {"--cache-dir", "--target", "--schedule"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const CacheTarget target = cache_target(parsed);
  if (!target.root) {
    out << "the kernel cache is memory-only: " << target.memory_only_reason << "\n";
    return k_exit_ok;
  }
  const std::string root = *target.root;
  const std::vector<cache::ListedEntry> entries = cache::list_entries(root);
  nlohmann::json listed = nlohmann::json::array();
  if (!parsed.has("--json")) {
    out << fmt::format("cache {}: {} entr{}\n", root, entries.size(), entries.size() == 1 ? "y" : "ies");
    out << fmt::format("{:<16}  {:<16} {:<8} {:<34} {:>9} {:>10}  {}\n", "key", "schedule", "target", "shape", "bytes",
                       "compile ms", "entry points (registers, spills)");
  }
  const std::optional<std::string> only_target = parsed.option("--target");
  const std::optional<std::string> only_schedule = parsed.option("--schedule");
  const cache::CurrentIdentity current = KernelRegistry::instance().current_identity();
  for (const cache::ListedEntry& e : entries) {
    if (e.manifest && ((only_target && e.manifest->key_fields.target != *only_target) ||
                       (only_schedule && e.manifest->launch.value("schedule", std::string()) != *only_schedule) ||
                       (parsed.has("--stale") && !cache::orphan_reason(*e.manifest, current)))) {
      continue;
    }
    if (!e.manifest) {
      out << fmt::format("{}: unreadable manifest ({})\n", e.dir, e.problem);
      listed.push_back({{"dir", e.dir}, {"problem", e.problem}});
      continue;
    }
    const cache::Manifest& m = *e.manifest;
    std::string eps;
    for (const cache::EntryPoint& ep : m.entry_points) {
      eps += fmt::format("{}{} ({}, {})", eps.empty() ? "" : ", ", ep.name, ep.resources.value("registers", 0),
                         ep.resources.value("spill_store_bytes", 0));
    }
    const std::string schedule = m.launch.value("schedule", std::string("?"));
    if (!parsed.has("--json")) {
      out << fmt::format("{:<16}  {:<16} {:<8} {:<34} {:>9} {:>10.0f}  {}\n", m.key.substr(0, 16), schedule,
                         m.key_fields.target, m.key_fields.shape_key, e.bytes_on_disk, m.compile_ms, eps);
    }
    listed.push_back({{"key", m.key},
                      {"schedule", schedule},
                      {"target", m.key_fields.target},
                      {"shape", m.key_fields.shape_key},
                      {"bytes", e.bytes_on_disk},
                      {"compile_ms", m.compile_ms},
                      {"producer", cache::producer_name(m.producer)},
                      {"last_used_unix", m.last_used_unix},
                      {"stale", cache::orphan_reason(m, current).value_or("")},
                      {"dir", e.dir}});
  }
  if (parsed.has("--json")) {
    out << nlohmann::json{{"root", root}, {"entries", listed}}.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  }
  return k_exit_ok;
}

} // namespace kda::tools
