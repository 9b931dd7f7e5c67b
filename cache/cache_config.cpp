#include "cache/cache_config.hpp"

#include "cache/cache_dir.hpp"
#include "cache/entry_io.hpp"
#include "cache/posix_io.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace kda::cache {
namespace {

constexpr std::array<std::string_view, 8> k_env_vars = {"KDAJIT_CACHE_DIR", "XDG_CACHE_HOME",   "HOME",
                                                       "TMPDIR",           "KDAJIT_LOCK",      "KDAJIT_LOCK_DIR",
                                                       "XDG_RUNTIME_DIR",  "KDAJIT_LOCK_TIMEOUT"};

std::string env_value(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

struct Source {
  std::string source;
  std::string path;
};

std::vector<Source> root_sources(const EnvMap& env) {
  std::vector<Source> out;
  if (std::string dir = env_value(env, "KDAJIT_CACHE_DIR"); !dir.empty()) {
    out.push_back({"KDAJIT_CACHE_DIR", dir});
  }
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  if (std::string xdg = env_value(env, "XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    out.push_back({"$XDG_CACHE_HOME/kdajit", xdg + "/kdajit"});
  }
  if (std::string home = env_value(env, "HOME"); !home.empty()) {
    out.push_back({"$HOME/.cache/kdajit", home + "/.cache/kdajit"});
  }
  std::string tmp = env_value(env, "TMPDIR");
  out.push_back({"$TMPDIR/kdajit-<uid>", fmt::format("{}/kdajit-{}", tmp.empty() ? "/tmp" : tmp, ::geteuid())});
  return out;
}

std::string summarize(const std::vector<DirCandidate>& candidates) {
  std::string out;
  for (const DirCandidate& c : candidates) {
    out += fmt::format("{}{} {}: {}", out.empty() ? "" : "; ", c.source, c.path, c.reason);
  }
  return out;
}

// Whether `root` is empty or already holds kdajit's layout: a directory of
// other files (a system directory behind a symlink, a project tree) is not
// turned into a cache.
bool empty_or_cache(const std::string& root) {
  std::error_code ec;
  if (std::filesystem::is_directory(root + "/" + std::string(k_layout_dir), ec)) {
    return true;
  }
  return std::filesystem::is_empty(root, ec) && !ec;
}

// Accepts a root only if it is empty or a cache already, and its v1 layout
// can be made too.
DirCheck prepare_root(const std::string& root) {
  DirCheck check = prepare_private_dir(root);
  if (check.verdict != DirVerdict::usable) {
    return check;
  }
  if (!empty_or_cache(root)) {
    return {DirVerdict::refused, fmt::format("holds other files and no kdajit cache ({}/)", k_layout_dir)};
  }
  for (const char* sub : {"/v1", "/v1/entries", "/v1/tmp"}) {
    if (const int error = try_make_directory(root + sub, 0700); error != 0) {
      return {DirVerdict::unwritable, fmt::format("cannot create {}{}: {}", root, sub, errno_text(error))};
    }
  }
  return check;
}

void resolve_root(const EnvMap& env, CacheConfig& config) {
  for (const Source& s : root_sources(env)) {
    const DirCheck check = prepare_root(s.path);
    config.root_candidates.push_back({s.source, s.path, std::string(dir_verdict_name(check.verdict)), check.reason});
    if (check.verdict == DirVerdict::usable) {
      config.root = s.path;
      const DirCandidate& first = config.root_candidates.front();
      if (config.root_candidates.size() > 1 && first.source == "KDAJIT_CACHE_DIR") {
        config.fallback_warning = fmt::format("KDAJIT_CACHE_DIR={} is {} ({}): the cache is {} ({}) instead",
                                              first.path, first.verdict, first.reason, s.path, s.source);
      }
      return;
    }
    if (check.verdict == DirVerdict::unwritable) {
      config.memory_only_warning =
          fmt::format("cache directory {} ({}) is {}, so kernels are cached in memory only for this process", s.path,
                      s.source, check.reason);
      return;
    }
  }
  config.memory_only_warning = fmt::format(
      "no usable cache directory ({}), so kernels are cached in memory only for this process",
      summarize(config.root_candidates));
}

bool is_inside(const std::string& path, const std::string& root) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) {
    return false;
  }
  const std::filesystem::path r = std::filesystem::weakly_canonical(root, ec);
  if (ec) {
    return false;
  }
  const std::string ps = p.string();
  const std::string rs = r.string();
  return ps == rs || (ps.size() > rs.size() && ps.compare(0, rs.size(), rs) == 0 && ps[rs.size()] == '/');
}

void resolve_locks(const EnvMap& env, CacheConfig& config) {
  if (env_value(env, "KDAJIT_LOCK") == "none") {
    config.lock_note = "cross-process locks disabled by KDAJIT_LOCK=none";
    return;
  }
  std::vector<Source> sources;
  if (std::string dir = env_value(env, "KDAJIT_LOCK_DIR"); !dir.empty()) {
    sources.push_back({"KDAJIT_LOCK_DIR", dir});
  }
  if (std::string run = env_value(env, "XDG_RUNTIME_DIR"); !run.empty()) {
    sources.push_back({"$XDG_RUNTIME_DIR/kdajit-locks", run + "/kdajit-locks"});
  }
  sources.push_back({"/tmp/kdajit-locks-<uid>", fmt::format("/tmp/kdajit-locks-{}", ::geteuid())});
  for (const Source& s : sources) {
    if (config.root && is_inside(s.path, *config.root)) {
      config.lock_candidates.push_back({s.source, s.path, "skipped", "inside the cache directory"});
      continue;
    }
    const DirCheck check = prepare_private_dir(s.path);
    config.lock_candidates.push_back({s.source, s.path, std::string(dir_verdict_name(check.verdict)), check.reason});
    if (check.verdict == DirVerdict::usable) {
      config.lock_dir = s.path;
      return;
    }
  }
  config.lock_note = fmt::format("no usable lock directory ({})", summarize(config.lock_candidates));
  config.lock_warning =
      config.lock_note + ": cross-process locks are off, so processes may compile the same kernel concurrently";
}

void resolve_lock_timeout(const EnvMap& env, CacheConfig& config) {
  const std::string text = env_value(env, "KDAJIT_LOCK_TIMEOUT");
  if (text.empty()) {
    return;
  }
  double seconds = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !(seconds >= 0) || seconds > 86400) {
    config.notes.push_back(
        fmt::format("ignored KDAJIT_LOCK_TIMEOUT={}: expected seconds between 0 and 86400", text));
    return;
  }
  config.lock_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

nlohmann::json candidates_json(const std::vector<DirCandidate>& candidates) {
  nlohmann::json out = nlohmann::json::array();
  for (const DirCandidate& c : candidates) {
    out.push_back({{"source", c.source}, {"path", c.path}, {"verdict", c.verdict}, {"reason", c.reason}});
  }
  return out;
}

} // namespace

CacheConfig resolve_cache_config(const EnvMap& env) {
  CacheConfig config;
  resolve_root(env, config);
  resolve_locks(env, config);
  resolve_lock_timeout(env, config);
  return config;
}

CacheConfig CacheConfig::from_environment() {
  EnvMap env;
  for (const std::string_view name : k_env_vars) {
    const std::string key(name);
    if (const char* value = std::getenv(key.c_str()); value != nullptr) {
      env[key] = value;
    }
  }
  return resolve_cache_config(env);
}

nlohmann::json CacheConfig::to_json() const {
  return {{"root", root ? nlohmann::json(*root) : nlohmann::json(nullptr)},
          {"memory_only", !root.has_value()},
          {"root_candidates", candidates_json(root_candidates)},
          {"lock_dir", lock_dir ? nlohmann::json(*lock_dir) : nlohmann::json(nullptr)},
          {"lock_candidates", candidates_json(lock_candidates)},
          {"lock_note", lock_note},
          {"lock_timeout_ms", lock_timeout.count()},
          {"notes", notes}};
}

std::span<const std::string_view> cache_environment_variables() {
  return k_env_vars;
}

} // namespace kda::cache
