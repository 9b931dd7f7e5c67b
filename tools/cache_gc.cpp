// kdajit cache gc [--max-bytes N] [--older-than DAYS] [--orphans] [--dry-run] [--cache-dir DIR] [--json]:
// evicts cache entries (cache/eviction.hpp: orphans, unused ones, then least
// recently used ones over the size cap); never an entry another process is
// building or publishing.
#include "cache/eviction.hpp"
#include "runtime/kernel_registry.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cache_target.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ostream>

namespace kda::tools {
namespace {

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string schedule_of(const std::vector<cache::ListedEntry>& entries, const std::string& dir) {
  for (const cache::ListedEntry& e : entries) {
    if (e.dir == dir && e.manifest) {
      return e.manifest->launch.value("schedule", std::string("?")) + " " + e.manifest->key_fields.target;
    }
  }
  return "?";
}

cache::EvictionPolicy gc_policy(const ParsedArgs& parsed) {
  cache::EvictionPolicy policy;
  policy.orphans = parsed.has("--orphans");
  if (const std::optional<std::string> days = parsed.option("--older-than")) {
    char* end = nullptr;
    const double d = std::strtod(days->c_str(), &end);
    if (end == days->c_str() || *end != '\0' || !(d >= 0.0)) {
      throw UsageError("--older-than takes a number of days, not '" + *days + "'");
    }
    policy.older_than_s = static_cast<std::int64_t>(d * 86400.0);
  }
  std::optional<std::string> cap = parsed.option("--max-bytes");
  if (!cap) {
    if (const char* env = std::getenv("KDAJIT_MAX_BYTES"); env != nullptr && *env != '\0') {
      cap = env;
    }
  }
  if (cap) {
    policy.max_bytes = cache::parse_byte_size(*cap);
    if (!policy.max_bytes) {
      throw UsageError("the size cap takes bytes with an optional K, M or G suffix, at most 1 EiB, not '" + *cap + "'");
    }
  } else {
    policy.max_bytes = cache::k_default_max_bytes;
  }
  return policy;
}

} // namespace

int cache_gc_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed =
      parse_args(args, {"--json", "--orphans", "--dry-run"}, {"--max-bytes", "--older-than", "--cache-dir"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const cache::EvictionPolicy policy = gc_policy(parsed);
  const CacheTarget target = cache_target(parsed);
  const bool json = parsed.has("--json");
  if (report_memory_only(target, json, "collect", out)) {
    return k_exit_ok;
  }
  const std::vector<cache::ListedEntry> entries = cache::list_entries(*target.root);
  const cache::EvictionPlan plan =
      cache::plan_eviction(entries, policy, KernelRegistry::instance().current_identity(), now_unix());
  const bool dry_run = parsed.has("--dry-run");
  cache::EvictionResult result;
  if (dry_run) {
    result.removed = plan.victims;
  } else {
    result = cache::apply_eviction(cache::CacheLayout(*target.root), target.lock_dir, plan);
  }
  std::uint64_t removed_bytes = 0;
  for (const cache::EvictionCandidate& v : result.removed) {
    removed_bytes += v.bytes;
  }
  bool io_failure = false;
  for (const auto& [v, why] : result.skipped) {
    io_failure = io_failure || why.rfind("cannot move", 0) == 0;
  }
  if (json) {
    nlohmann::json removed = nlohmann::json::array();
    for (const cache::EvictionCandidate& v : result.removed) {
      removed.push_back({{"key", v.key}, {"dir", v.dir}, {"bytes", v.bytes}, {"reason", v.reason}});
    }
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& [v, why] : result.skipped) {
      skipped.push_back({{"key", v.key}, {"dir", v.dir}, {"reason", why}});
    }
    out << nlohmann::json{{"root", *target.root},
                          {"dry_run", dry_run},
                          {"max_bytes", policy.max_bytes ? nlohmann::json(*policy.max_bytes) : nlohmann::json()},
                          {"entries_before", plan.entries_before},
                          {"bytes_before", plan.bytes_before},
                          {"bytes_after", plan.bytes_before - removed_bytes},
                          {"removed", removed},
                          {"skipped", skipped}}
                .dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  } else {
    out << fmt::format("cache {}: {} entr{}, {} bytes; cap {} bytes\n", *target.root, plan.entries_before,
                       plan.entries_before == 1 ? "y" : "ies", plan.bytes_before,
                       policy.max_bytes ? std::to_string(*policy.max_bytes) : std::string("none"));
    for (const cache::EvictionCandidate& v : result.removed) {
      out << fmt::format("{} {}  {}  {} bytes: {}\n", dry_run ? "would remove" : "removed", v.key.substr(0, 16),
                         schedule_of(entries, v.dir), v.bytes, v.reason);
    }
    for (const auto& [v, why] : result.skipped) {
      out << fmt::format("kept {}: {}\n", v.key.substr(0, 16), why);
    }
    out << fmt::format("{} {} entr{} ({} bytes); {} bytes left\n", dry_run ? "would remove" : "removed",
                       result.removed.size(), result.removed.size() == 1 ? "y" : "ies", removed_bytes,
                       plan.bytes_before - removed_bytes);
  }
  if (io_failure) {
    err << "kdajit cache gc: some entries could not be removed (see above)\n";
    return k_exit_cache;
  }
  return k_exit_ok;
}

} // namespace kda::tools
