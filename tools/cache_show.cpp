// kdajit cache show PREFIX [--log] [--source] [--cache-dir DIR] [--json]: one
// cache entry in detail, found by a prefix of its key (at least 4 hex digits).
#include "cache/entry_io.hpp"
#include "cache/list_entries.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cache_target.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <fstream>
#include <ostream>
#include <sstream>

namespace kda::tools {
namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string key_of(const cache::ListedEntry& e) {
  return e.manifest ? e.manifest->key : e.dir.substr(e.dir.find_last_of('/') + 1);
}

} // namespace

int cache_show_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--json", "--log", "--source"}, {"--cache-dir"});
  if (parsed.positional.size() != 1) {
    throw UsageError("'cache show' takes one key prefix (see 'kdajit cache ls')");
  }
  const std::string prefix = parsed.positional.front();
  if (prefix.size() < 4 || prefix.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw UsageError("a key prefix is at least 4 lowercase hex digits, not '" + prefix + "'");
  }
  const CacheTarget target = cache_target(parsed);
  if (!target.root) {
    err << "kdajit cache show: the kernel cache is memory-only (" << target.memory_only_reason << ")\n";
    return k_exit_not_found;
  }
  std::vector<cache::ListedEntry> matches;
  for (cache::ListedEntry& e : cache::list_entries(*target.root)) {
    if (key_of(e).rfind(prefix, 0) == 0) {
      matches.push_back(std::move(e));
    }
  }
  if (matches.empty()) {
    err << "kdajit cache show: no entry of " << *target.root << " has a key starting with " << prefix << "\n";
    return k_exit_not_found;
  }
  if (matches.size() > 1) {
    std::string keys;
    for (const cache::ListedEntry& e : matches) {
      keys += "\n  " + key_of(e);
    }
    throw UsageError(fmt::format("{} entries have keys starting with {}; give more digits:{}", matches.size(), prefix,
                                 keys));
  }
  const cache::ListedEntry& e = matches.front();
  const std::optional<std::string> log = parsed.has("--log") ? read_file(e.dir + "/compile.log") : std::nullopt;
  const std::optional<std::string> source = parsed.has("--source") ? read_file(e.dir + "/source.cu") : std::nullopt;
  if (parsed.has("--json")) {
    nlohmann::json j{{"dir", e.dir}, {"bytes", e.bytes_on_disk}};
    j["manifest"] = e.manifest ? cache::to_json(*e.manifest) : nlohmann::json(nullptr);
    if (!e.manifest) {
      j["problem"] = e.problem;
    }
    if (parsed.has("--log")) {
      j["compile_log"] = log ? nlohmann::json(*log) : nlohmann::json(nullptr);
    }
    if (parsed.has("--source")) {
      j["source"] = source ? nlohmann::json(*source) : nlohmann::json(nullptr);
    }
    out << j.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
    return k_exit_ok;
  }
  out << fmt::format("entry {}\n  dir {} ({} bytes)\n", key_of(e), e.dir, e.bytes_on_disk);
  if (!e.manifest) {
    out << "  unreadable manifest: " << e.problem << "\n";
  } else {
    const cache::Manifest& m = *e.manifest;
    const cache::CacheKeyFields& f = m.key_fields;
    out << fmt::format("  schedule {}  target {}  shape {}\n", m.launch.value("schedule", std::string("?")), f.target,
                       f.shape_key);
    out << fmt::format("  generator {}  ABI {}  layout {}  NVRTC {}\n", f.generator_id, f.abi_version,
                       f.layout_version, f.nvrtc_version);
    out << fmt::format("  schedule id {}\n  options {}\n", f.schedule_id, fmt::join(f.options, " "));
    out << fmt::format("  cubin {} bytes, sha256 {}\n  source sha256 {}\n", m.cubin_size, m.cubin_sha256,
                       m.source_sha256.empty() ? "(unknown)" : m.source_sha256);
    for (const cache::EntryPoint& ep : m.entry_points) {
      out << fmt::format("  entry {} {}\n", ep.name, ep.resources.dump(-1, ' ', false, k_replace_invalid_utf8));
    }
    out << fmt::format("  launch {}\n", m.launch.dump(-1, ' ', false, k_replace_invalid_utf8));
    out << fmt::format("  producer {}, compiled in {:.0f} ms, created {}, last used {} (unix seconds)\n",
                       cache::producer_name(m.producer), m.compile_ms, m.created_unix, m.last_used_unix);
  }
  if (parsed.has("--log")) {
    out << "== compile.log\n" << (log ? *log : std::string("(none)\n"));
  }
  if (parsed.has("--source")) {
    out << "== source.cu\n" << (source ? *source : std::string("(none)\n"));
  }
  return k_exit_ok;
}

} // namespace kda::tools
