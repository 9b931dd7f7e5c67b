#include "cache/cache_config.hpp"

#include "cache/disk_cache.hpp"
#include "cache/warnings.hpp"
#include "cache_test_support.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

using namespace kda::cache;
using kda::cache::test::ScratchDir;

namespace {

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// An environment where every candidate lies inside the scratch directory.
EnvMap chain_env(const ScratchDir& s) {
  return {{"KDAJIT_CACHE_DIR", s / "explicit"}, {"XDG_CACHE_HOME", s / "xdg"}, {"HOME", s / "home"},
          {"TMPDIR", s / "tmp"},                {"KDAJIT_LOCK", "none"}};
}

// What two caches opened with `config` warn about (each warning is said once
// per process).
std::vector<std::string> warnings_of_two_caches(const CacheConfig& config) {
  reset_warnings_for_testing();
  std::vector<std::string> warnings;
  const WarningSink sink = [&](const std::string& m) { warnings.push_back(m); };
  DiskCache first(config, sink);
  DiskCache second(config, sink);
  return warnings;
}

std::string tmp_candidate(const ScratchDir& s) {
  return fmt::format("{}/kdajit-{}", s / "tmp", ::geteuid());
}

} // namespace

TEST_CASE("KDAJIT_CACHE_DIR is created private with the v1 layout", "[cache][config]") {
  ScratchDir s;
  const CacheConfig config = resolve_cache_config(test::scratch_env(s));
  REQUIRE(config.root == s / "cache");
  CHECK(mode_of(s / "cache") == 0700);
  CHECK(test::exists(s / "cache/v1/entries"));
  CHECK(test::exists(s / "cache/v1/tmp"));
  CHECK(config.memory_only_warning.empty());
  CHECK(config.lock_dir == s / "locks");
  CHECK(mode_of(s / "locks") == 0700);
  CHECK(config.lock_timeout == k_default_lock_timeout);
  CHECK(config.to_json()["root"] == s / "cache");
}

TEST_CASE("cache directory fallback chain", "[cache][config]") {
  ScratchDir s;
  EnvMap env = chain_env(s);
  CHECK(resolve_cache_config(env).root == s / "explicit");
  env.erase("KDAJIT_CACHE_DIR");
  CHECK(resolve_cache_config(env).root == s / "xdg/kdajit");
  env["XDG_CACHE_HOME"] = "relative/xdg"; // ignored, as the XDG spec says
  CHECK(resolve_cache_config(env).root == s / "home/.cache/kdajit");
  env.erase("XDG_CACHE_HOME");
  env.erase("HOME");
  CHECK(resolve_cache_config(env).root == tmp_candidate(s));
  CHECK(mode_of(s / "home/.cache") == 0700);
}

TEST_CASE("a group-writable cache directory is refused with a reason", "[cache][config]") {
  ScratchDir s;
  REQUIRE(::mkdir((s / "explicit").c_str(), 0700) == 0);
  REQUIRE(::chmod((s / "explicit").c_str(), 0770) == 0);
  const CacheConfig config = resolve_cache_config(chain_env(s));
  CHECK(config.root == s / "xdg/kdajit");
  REQUIRE(config.root_candidates.size() == 2);
  CHECK(config.root_candidates[0].source == "KDAJIT_CACHE_DIR");
  CHECK(config.root_candidates[0].verdict == "refused");
  CHECK(config.root_candidates[0].reason == "group- or other-writable (mode 0770)");
  CHECK(config.root_candidates[1].verdict == "usable");
  CHECK(mode_of(s / "explicit") == 0770); // refused, not "fixed"
}

TEST_CASE("a non-directory or uncreatable candidate is skipped", "[cache][config]") {
  ScratchDir s;
  test::write_text(s / "explicit", "a file");
  test::write_text(s / "xdg", "a file");
  const CacheConfig config = resolve_cache_config(chain_env(s));
  CHECK(config.root == s / "home/.cache/kdajit");
  REQUIRE(config.root_candidates.size() == 3);
  CHECK(config.root_candidates[0].reason == "not a directory");
  CHECK(config.root_candidates[1].verdict == "uncreatable");
  CHECK(config.root_candidates[1].reason == "cannot create: Not a directory");
}

TEST_CASE("a cache directory owned by another user is refused", "[cache][config]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to chown a directory to another user");
    return;
  }
  ScratchDir s;
  REQUIRE(::mkdir((s / "explicit").c_str(), 0700) == 0);
  REQUIRE(::chown((s / "explicit").c_str(), 65534, 65534) == 0);
  const CacheConfig config = resolve_cache_config(chain_env(s));
  CHECK(config.root == s / "xdg/kdajit");
  CHECK(config.root_candidates[0].reason == "owned by uid 65534, not by uid 0");
}

TEST_CASE("a refused KDAJIT_CACHE_DIR is said once, with the directory used instead", "[cache][config]") {
  ScratchDir s;
  test::write_text(s / "file", "x");
  const EnvMap env = {{"KDAJIT_CACHE_DIR", s / "file"}, {"XDG_CACHE_HOME", s / "xdg"}, {"KDAJIT_LOCK", "none"}};
  const CacheConfig config = resolve_cache_config(env);
  CHECK(config.root == s / "xdg/kdajit");
  CHECK(config.fallback_warning ==
        fmt::format("KDAJIT_CACHE_DIR={} is refused (not a directory): the cache is {} ($XDG_CACHE_HOME/kdajit) instead",
                    s / "file", s / "xdg/kdajit"));
  const std::vector<std::string> warnings = warnings_of_two_caches(config);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == config.fallback_warning);
  // without KDAJIT_CACHE_DIR, falling through the defaults is silent
  const CacheConfig plain = resolve_cache_config({{"XDG_CACHE_HOME", s / "file"}, {"HOME", s / "home"}});
  CHECK(plain.fallback_warning.empty());
  reset_warnings_for_testing();
}

TEST_CASE("a directory of other files is never made a cache, also behind a symlink", "[cache][config]") {
  ScratchDir s;
  const std::string system_dir = s / "usr";
  REQUIRE(::mkdir(system_dir.c_str(), 0755) == 0);
  test::write_text(system_dir + "/bin", "a system file");
  REQUIRE(::symlink(system_dir.c_str(), (s / "link").c_str()) == 0);
  const CacheConfig config = resolve_cache_config({{"KDAJIT_CACHE_DIR", s / "link"}, {"XDG_CACHE_HOME", s / "xdg"}});
  CHECK(config.root == s / "xdg/kdajit");
  CHECK(config.root_candidates[0].reason == "holds other files and no kdajit cache (v1/)");
  CHECK_FALSE(std::filesystem::exists(system_dir + "/v1")); // nothing created there
  // an existing cache and an empty directory are accepted
  CHECK(resolve_cache_config({{"KDAJIT_CACHE_DIR", s / "xdg/kdajit"}}).root == s / "xdg/kdajit");
  REQUIRE(::mkdir((s / "empty").c_str(), 0700) == 0);
  CHECK(resolve_cache_config({{"KDAJIT_CACHE_DIR", s / "empty"}}).root == s / "empty");
}

TEST_CASE("no usable directory means memory-only with exactly one warning", "[cache][config]") {
  ScratchDir s;
  test::write_text(s / "file", "x");
  const EnvMap env = {{"KDAJIT_CACHE_DIR", s / "file/a"},
                      {"HOME", s / "file/home"},
                      {"TMPDIR", s / "file/tmp"},
                      {"KDAJIT_LOCK", "none"}};
  const CacheConfig config = resolve_cache_config(env);
  CHECK_FALSE(config.root.has_value());
  CHECK(config.root_candidates.size() == 3);
  CHECK_THAT(config.memory_only_warning, Catch::Matchers::StartsWith("no usable cache directory (KDAJIT_CACHE_DIR "));
  CHECK_THAT(config.memory_only_warning, Catch::Matchers::EndsWith("kernels are cached in memory only for this process"));

  reset_warnings_for_testing();
  std::vector<std::string> warnings;
  const WarningSink sink = [&](const std::string& m) { warnings.push_back(m); };
  DiskCache first(config, sink);
  DiskCache second(config, sink);
  CHECK(first.memory_only());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == config.memory_only_warning);
  int builds = 0;
  const CacheKey key = test::sample_key();
  first.get_or_build(key, [&] { ++builds; return test::sample_built(); });
  first.get_or_build(key, [&] { ++builds; return test::sample_built(); });
  CHECK(builds == 1);
  CHECK(first.lookup(key).miss == MissReason::memory_only);
  CHECK(warnings.size() == 1);
  reset_warnings_for_testing();
}

TEST_CASE("a read-only cache directory means memory-only with one warning", "[cache][config]") {
  ScratchDir s;
  REQUIRE(::mkdir((s / "explicit").c_str(), 0700) == 0);
  REQUIRE(::chmod((s / "explicit").c_str(), 0500) == 0);
  if (::access((s / "explicit").c_str(), W_OK) == 0) {
    WARN("skipped: running as root, a mode 0500 directory is still writable");
    return;
  }
  const CacheConfig config = resolve_cache_config(chain_env(s));
  CHECK_FALSE(config.root.has_value());
  CHECK(config.root_candidates.size() == 1); // the search stops at an unwritable directory of ours
  CHECK(config.root_candidates[0].verdict == "unwritable");
  reset_warnings_for_testing();
  int warnings = 0;
  DiskCache a(config, [&](const std::string&) { ++warnings; });
  DiskCache b(config, [&](const std::string&) { ++warnings; });
  CHECK(warnings == 1);
  CHECK(a.lookup(test::sample_key()).miss == MissReason::memory_only);
  reset_warnings_for_testing();
}

TEST_CASE("lock directory resolution", "[cache][config]") {
  ScratchDir s;
  SECTION("KDAJIT_LOCK=none disables cross-process locks") {
    EnvMap env = test::scratch_env(s);
    env["KDAJIT_LOCK"] = "none";
    const CacheConfig config = resolve_cache_config(env);
    CHECK_FALSE(config.lock_dir.has_value());
    CHECK(config.lock_note == "cross-process locks disabled by KDAJIT_LOCK=none");
    CHECK(config.lock_warning.empty());
  }
  SECTION("a lock directory inside the cache root is skipped") {
    const EnvMap env = {{"KDAJIT_CACHE_DIR", s / "cache"},
                        {"KDAJIT_LOCK_DIR", s / "cache/locks"},
                        {"XDG_RUNTIME_DIR", s / "run"}};
    const CacheConfig config = resolve_cache_config(env);
    CHECK(config.lock_dir == s / "run/kdajit-locks");
    REQUIRE_FALSE(config.lock_candidates.empty());
    CHECK(config.lock_candidates[0].verdict == "skipped");
    CHECK(config.lock_candidates[0].reason == "inside the cache directory");
    CHECK_FALSE(test::exists(s / "cache/locks"));
  }
  SECTION("KDAJIT_LOCK_TIMEOUT in seconds") {
    EnvMap env = test::scratch_env(s);
    env["KDAJIT_LOCK_TIMEOUT"] = "0.25";
    CHECK(resolve_cache_config(env).lock_timeout == std::chrono::milliseconds(250));
    env["KDAJIT_LOCK_TIMEOUT"] = "soon";
    const CacheConfig bad = resolve_cache_config(env);
    CHECK(bad.lock_timeout == k_default_lock_timeout);
    REQUIRE(bad.notes.size() == 1);
    CHECK(bad.notes[0] == "ignored KDAJIT_LOCK_TIMEOUT=soon: expected seconds between 0 and 86400");
  }
}

TEST_CASE("the environment variables read are listed for kdajit env", "[cache][config]") {
  const auto names = cache_environment_variables();
  CHECK(std::find(names.begin(), names.end(), "KDAJIT_CACHE_DIR") != names.end());
  CHECK(std::find(names.begin(), names.end(), "KDAJIT_LOCK") != names.end());
}

TEST_CASE("a cache setting that does not parse is warned about once, not ignored silently", "[cache][config]") {
  ScratchDir s;
  const EnvMap env = {{"KDAJIT_CACHE_DIR", s / "cache"}, {"KDAJIT_LOCK", "none"}, {"KDAJIT_LOCK_TIMEOUT", "soon"}};
  const CacheConfig config = resolve_cache_config(env);
  const std::vector<std::string> warnings = warnings_of_two_caches(config);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "ignored KDAJIT_LOCK_TIMEOUT=soon: expected seconds between 0 and 86400");
  reset_warnings_for_testing();
}
