// kdajit cache clear [--cache-dir DIR] [--json]: removes every entry of the
// kernel cache (readable or not), except one another process is building or
// publishing at that moment (cache/eviction.hpp apply_eviction).
#include "cache/eviction.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cache_target.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <ostream>

namespace kda::tools {

int cache_clear_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--json"}, {"--cache-dir"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const CacheTarget target = cache_target(parsed);
  const bool json = parsed.has("--json");
  if (report_memory_only(target, json, "clear", out)) {
    return k_exit_ok;
  }
  cache::EvictionPlan plan;
  for (const cache::ListedEntry& e : cache::list_entries(*target.root)) {
    // the entry directory's name is its key, also when the manifest is unreadable
    const std::string key = std::filesystem::path(e.dir).filename().string();
    plan.victims.push_back({e.dir, key, e.bytes_on_disk, e.manifest ? e.manifest->last_used_unix : 0, "clear"});
    plan.bytes_before += e.bytes_on_disk;
  }
  plan.entries_before = plan.victims.size();
  const cache::EvictionResult result = cache::apply_eviction(cache::CacheLayout(*target.root), target.lock_dir, plan);
  std::uint64_t removed_bytes = 0;
  for (const cache::EvictionCandidate& v : result.removed) {
    removed_bytes += v.bytes;
  }
  if (json) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& [v, why] : result.skipped) {
      skipped.push_back({{"key", v.key}, {"reason", why}});
    }
    out << nlohmann::json{{"root", *target.root},
                          {"removed", result.removed.size()},
                          {"removed_bytes", removed_bytes},
                          {"skipped", skipped}}
                .dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  } else {
    out << fmt::format("cache {}: removed {} entr{} ({} bytes)\n", *target.root, result.removed.size(),
                       result.removed.size() == 1 ? "y" : "ies", removed_bytes);
    for (const auto& [v, why] : result.skipped) {
      out << fmt::format("kept {}: {}\n", v.key.substr(0, 16), why);
    }
  }
  for (const auto& [v, why] : result.skipped) {
    if (why.rfind("cannot move", 0) == 0) {
      err << "kdajit cache clear: some entries could not be removed (see above)\n";
      return k_exit_cache;
    }
  }
  return k_exit_ok;
}

} // namespace kda::tools
