// kdajit cache verify [--cache-dir DIR] [--json]: every entry's manifest, key
// and cubin checksum (cache/entry_io.hpp read_entry). Exit 5 when one is bad.
#include "cache/entry_io.hpp"
#include "cache/list_entries.hpp"
#include "tools/args.hpp"
#include "tools/cache_target.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {

int cache_verify_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--json"}, {"--cache-dir"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const CacheTarget target = cache_target(parsed);
  if (!target.root) {
    out << "the kernel cache is memory-only (" << target.memory_only_reason << "): nothing to verify\n";
    return k_exit_ok;
  }
  nlohmann::json results = nlohmann::json::array();
  int bad = 0;
  const std::vector<cache::ListedEntry> entries = cache::list_entries(*target.root);
  for (const cache::ListedEntry& e : entries) {
    std::string problem;
    std::string key = e.dir.substr(e.dir.find_last_of('/') + 1);
    if (!e.manifest) {
      problem = "unreadable manifest: " + e.problem;
    } else {
      // the key recomputed from the manifest's fields must name this directory
      const cache::CacheKey recomputed = cache::make_cache_key(e.manifest->key_fields);
      const cache::LookupResult r = cache::read_entry(e.dir, recomputed);
      if (!r.hit()) {
        problem = fmt::format("{}: {}", cache::miss_reason_name(r.miss), r.detail);
      } else if (recomputed.hex() != key) {
        problem = fmt::format("its key fields hash to {}, not its directory's name", recomputed.hex());
      }
    }
    bad += problem.empty() ? 0 : 1;
    results.push_back({{"key", key}, {"ok", problem.empty()}, {"problem", problem}});
    if (!parsed.has("--json")) {
      out << fmt::format("{} {}{}\n", problem.empty() ? "ok " : "BAD", key.substr(0, 16),
                         problem.empty() ? "" : ": " + problem);
    }
  }
  if (parsed.has("--json")) {
    out << nlohmann::json{{"root", *target.root}, {"entries", results}, {"bad", bad}}.dump(2) << "\n";
  } else {
    out << fmt::format("{} entr{} checked, {} bad\n", entries.size(), entries.size() == 1 ? "y" : "ies", bad);
  }
  if (bad > 0) {
    err << "kdajit cache verify: " << bad << " bad entr" << (bad == 1 ? "y" : "ies")
        << " (the runtime quarantines one on lookup and rebuilds it; 'kdajit cache gc' does not touch them)\n";
    return k_exit_cache;
  }
  return k_exit_ok;
}

} // namespace kda::tools
