// Eviction (cache/eviction.hpp): which entries a policy chooses, in which
// order, and that removing them skips an entry whose key is locked by a
// process building or publishing it.
#include "cache/disk_cache.hpp"
#include "cache/eviction.hpp"
#include "cache/file_lock.hpp"
#include "cache_test_support.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdlib>

using namespace kda::cache;
using Catch::Matchers::Contains;

namespace {

constexpr std::int64_t k_now = 1'800'000'000;
constexpr std::int64_t k_day = 86'400;

CurrentIdentity current() {
  const CacheKeyFields f = test::sample_fields();
  return {f.layout_version, f.abi_version, f.generator_id, f.nvrtc_version, f.nvrtc_build};
}

// An entry as list_entries reports it: `days` since its last use, `bytes` on disk.
ListedEntry entry(const std::string& name, std::int64_t days, std::uint64_t bytes, bool orphan = false) {
  CacheKeyFields f = test::sample_fields();
  f.shape_key = name;
  if (orphan) {
    f.generator_id = "kdagen-0.0.9+templates-old";
  }
  Manifest m;
  m.key_fields = f;
  m.key = make_cache_key(f).hex();
  m.last_used_unix = k_now - days * k_day;
  ListedEntry e;
  e.dir = "/cache/v1/entries/" + m.key.substr(0, 2) + "/" + m.key;
  e.manifest = m;
  e.bytes_on_disk = bytes;
  return e;
}

std::vector<std::string> shapes_of(const EvictionPlan& plan, const std::vector<ListedEntry>& entries) {
  std::vector<std::string> out;
  for (const EvictionCandidate& v : plan.victims) {
    for (const ListedEntry& e : entries) {
      if (e.dir == v.dir) {
        out.push_back(e.manifest->key_fields.shape_key);
      }
    }
  }
  return out;
}

} // namespace

TEST_CASE("eviction: orphans first, then least recently used, until under the cap", "[cache][eviction]") {
  const std::vector<ListedEntry> entries = {entry("a", 10, 100), entry("b", 2, 100), entry("c", 0, 100),
                                            entry("old", 0, 100, true), entry("d", 30, 100)};
  EvictionPolicy cap;
  cap.max_bytes = 250;
  const EvictionPlan plan = plan_eviction(entries, cap, current(), k_now);
  CHECK(plan.bytes_before == 500);
  CHECK(shapes_of(plan, entries) == std::vector<std::string>{"old", "d", "a"});
  CHECK(plan.bytes_after == 200);
  CHECK_THAT(plan.victims[0].reason, Contains("orphan: generator kdagen-0.0.9+templates-old (now kdagen-0.1.0"));
  CHECK_THAT(plan.victims[1].reason, Contains("over the cap, least recently used (30.0 days ago)"));
  // under the cap: nothing goes
  cap.max_bytes = 500;
  CHECK(plan_eviction(entries, cap, current(), k_now).victims.empty());
}

TEST_CASE("eviction: --orphans and --older-than choose before the cap", "[cache][eviction]") {
  const std::vector<ListedEntry> entries = {entry("a", 10, 100), entry("b", 2, 100), entry("old", 0, 100, true)};
  EvictionPolicy orphans;
  orphans.orphans = true;
  CHECK(shapes_of(plan_eviction(entries, orphans, current(), k_now), entries) == std::vector<std::string>{"old"});
  EvictionPolicy unused;
  unused.older_than_s = 5 * k_day;
  const EvictionPlan p = plan_eviction(entries, unused, current(), k_now);
  CHECK(shapes_of(p, entries) == std::vector<std::string>{"a"});
  CHECK_THAT(p.victims[0].reason, Contains("unused for 10.0 days"));
  // an empty field of the current identity is not compared (no NVRTC here)
  CurrentIdentity no_nvrtc = current();
  no_nvrtc.nvrtc_version.clear();
  ListedEntry other_nvrtc = entry("n", 0, 100);
  other_nvrtc.manifest->key_fields.nvrtc_version = "nvrtc-12.8.0";
  CHECK_FALSE(orphan_reason(*other_nvrtc.manifest, no_nvrtc));
  CHECK(orphan_reason(*other_nvrtc.manifest, current()));
  // an unreadable manifest is never chosen but counts toward the cap
  ListedEntry broken;
  broken.dir = "/cache/v1/entries/ff/broken";
  broken.bytes_on_disk = 1000;
  EvictionPolicy cap;
  cap.max_bytes = 100;
  const EvictionPlan capped = plan_eviction({broken, entry("c", 0, 100)}, cap, current(), k_now);
  CHECK(capped.victims.size() == 1);
  CHECK(capped.bytes_after == 1000);
}

TEST_CASE("eviction: byte sizes with K, M and G suffixes", "[cache][eviction]") {
  CHECK(parse_byte_size("1048576") == 1048576u);
  CHECK(parse_byte_size("512M") == 512ull << 20);
  CHECK(parse_byte_size("2G") == 2ull << 30);
  CHECK(parse_byte_size("64k") == 64ull << 10);
  CHECK_FALSE(parse_byte_size(""));
  CHECK_FALSE(parse_byte_size("G"));
  CHECK_FALSE(parse_byte_size("-1"));
  CHECK_FALSE(parse_byte_size("1.5G"));
  // above 1 EiB: refused, never wrapped around to a small cap (2^34 G is 2^64)
  CHECK(parse_byte_size("1073741824G") == k_max_byte_size);
  CHECK_FALSE(parse_byte_size("1073741825G"));
  CHECK_FALSE(parse_byte_size("17179869184G"));
  CHECK_FALSE(parse_byte_size("18446744073709551615"));
  CHECK_FALSE(parse_byte_size("99999999999999999999"));
}

TEST_CASE("eviction: a KDAJIT_MAX_BYTES that does not parse is reported once, the default applies",
          "[cache][eviction]") {
  reset_warnings_for_testing();
  std::vector<std::string> warnings;
  const WarningSink sink = [&](const std::string& m) { warnings.push_back(m); };
  ::setenv("KDAJIT_MAX_BYTES", "17179869184G", 1);
  CHECK(max_bytes_from_environment(sink) == k_default_max_bytes);
  CHECK(max_bytes_from_environment(sink) == k_default_max_bytes);
  ::setenv("KDAJIT_MAX_BYTES", "512M", 1);
  CHECK(max_bytes_from_environment(sink) == 512ull << 20);
  ::unsetenv("KDAJIT_MAX_BYTES");
  CHECK(max_bytes_from_environment(sink) == k_default_max_bytes);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("KDAJIT_MAX_BYTES='17179869184G' is not a byte count"));
  reset_warnings_for_testing();
}

TEST_CASE("eviction: removal skips an entry whose key another process holds locked", "[cache][eviction]") {
  test::ScratchDir s;
  const CacheConfig config = resolve_cache_config(test::scratch_env(s));
  REQUIRE(config.root);
  REQUIRE(config.lock_dir);
  DiskCache cache(config);
  const CacheKey kept_key = test::sample_key("kept");
  const CacheKey gone_key = test::sample_key("gone");
  for (const CacheKey& k : {kept_key, gone_key}) {
    const BuiltEntry built = test::sample_built();
    REQUIRE(cache.publish(k, built.manifest, built.cubin) == PublishOutcome::published);
  }
  const std::vector<ListedEntry> entries = list_entries(*config.root);
  REQUIRE(entries.size() == 2);
  EvictionPolicy all;
  all.max_bytes = 0;
  const EvictionPlan plan = plan_eviction(entries, all, current(), k_now);
  REQUIRE(plan.victims.size() == 2);
  // a publisher of `kept` holds its key's lock
  LockAttempt held = acquire_file_lock(fmt::format("{}/{}.lock", *config.lock_dir, kept_key.hex()),
                                       std::chrono::milliseconds(0));
  REQUIRE(held.outcome == LockOutcome::acquired);
  const EvictionResult r = apply_eviction(CacheLayout(*config.root), config.lock_dir, plan);
  REQUIRE(r.removed.size() == 1);
  CHECK(r.removed[0].key == gone_key.hex());
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].first.key == kept_key.hex());
  CHECK_THAT(r.skipped[0].second, Contains("another process is building or publishing it"));
  CHECK(test::exists(CacheLayout(*config.root).entry_dir(kept_key)));
  CHECK_FALSE(test::exists(CacheLayout(*config.root).entry_dir(gone_key)));
  CHECK(test::list_dir(CacheLayout(*config.root).tmp_dir()).empty()); // nothing left in the trash
  held.lock.release();
  CHECK(apply_eviction(CacheLayout(*config.root), config.lock_dir, plan).removed.size() == 1);
  CHECK(list_entries(*config.root).empty());
}

TEST_CASE("eviction: opportunistic collection keeps to the cap and yields to another collector", "[cache][eviction]") {
  test::ScratchDir s;
  const CacheConfig config = resolve_cache_config(test::scratch_env(s));
  REQUIRE(config.root);
  REQUIRE(config.lock_dir);
  DiskCache cache(config);
  for (const char* shape : {"a", "b", "c"}) {
    BuiltEntry built = test::sample_built();
    built.manifest.last_used_unix = k_now - (shape[0] - 'a' + 1) * k_day; // a is the most recently used
    REQUIRE(cache.publish(test::sample_key(shape), built.manifest, built.cubin) == PublishOutcome::published);
  }
  const std::uint64_t one = list_entries(*config.root).front().bytes_on_disk;
  {
    LockAttempt other = acquire_file_lock(*config.lock_dir + "/gc.lock", std::chrono::milliseconds(0));
    REQUIRE(other.outcome == LockOutcome::acquired);
    CHECK(collect_over_cap(*config.root, config.lock_dir, current(), one, k_now) == 0);
  }
  CHECK(collect_over_cap(*config.root, config.lock_dir, current(), one, k_now) == 2);
  const std::vector<ListedEntry> left = list_entries(*config.root);
  REQUIRE(left.size() == 1);
  CHECK(left[0].manifest->key == test::sample_key("a").hex());
  CHECK(collect_over_cap(*config.root, config.lock_dir, current(), one, k_now) == 0);
}
