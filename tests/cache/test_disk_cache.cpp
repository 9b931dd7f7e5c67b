#include "cache/disk_cache.hpp"

#include "cache/list_entries.hpp"
#include "cache/sha256.hpp"
#include "cache_test_support.hpp"

#include <catch2/catch.hpp>

#include <ctime>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

using namespace kda::cache;
using kda::cache::test::ScratchDir;

namespace {

// A disk cache in `s` whose warnings are collected.
struct TestCache {
  explicit TestCache(const ScratchDir& s) : cache(resolve_cache_config(test::scratch_env(s)), sink()) {}
  WarningSink sink() {
    return [this](const std::string& m) { warnings.push_back(m); };
  }
  std::vector<std::string> warnings;
  DiskCache cache;
};

std::vector<std::string> quarantined(const DiskCache& cache, const CacheKey& key) {
  std::vector<std::string> out;
  const std::string shard = cache.entry_dir(key).substr(0, cache.entry_dir(key).rfind('/'));
  for (const std::string& name : test::list_dir(shard)) {
    if (name.rfind(key.hex() + ".corrupt-", 0) == 0) {
      out.push_back(name);
    }
  }
  return out;
}

} // namespace

TEST_CASE("publish then lookup round-trips an entry", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  const BuiltEntry built = test::sample_built();
  CHECK(t.cache.publish(key, built.manifest, built.cubin, built.source, built.log) == PublishOutcome::published);

  const std::string dir = t.cache.entry_dir(key);
  CHECK(dir == s / ("cache/v1/entries/" + key.hex().substr(0, 2) + "/" + key.hex()));
  CHECK(test::list_dir(dir) == std::vector<std::string>{"compile.log", "kernel.cubin", "manifest.json", "source.cu"});
  CHECK(test::read_text_file(dir + "/source.cu") == *built.source);
  CHECK(test::read_text_file(dir + "/compile.log") == *built.log);
  CHECK(test::list_dir(s / "cache/v1/tmp").empty());

  DiskCache fresh(resolve_cache_config(test::scratch_env(s)));
  const LookupResult found = fresh.lookup(key);
  REQUIRE(found.hit());
  const Manifest& m = found.entry->manifest;
  CHECK(found.entry->cubin == built.cubin);
  CHECK(found.entry->dir == dir);
  CHECK(m.key == key.hex());
  CHECK(m.key_fields == key.fields());
  CHECK(m.cubin_sha256 == sha256_hex(built.cubin));
  CHECK(m.cubin_size == built.cubin.size());
  CHECK(m.source_sha256 == sha256_hex(*built.source));
  CHECK(m.entry_points == built.manifest.entry_points);
  CHECK(m.launch == built.manifest.launch);
  CHECK(m.producer == Producer::jit);
  CHECK(std::abs(m.created_unix - std::time(nullptr)) < 60);
  CHECK(m.last_used_unix == m.created_unix);
  CHECK(fresh.stats().get(Statistic::hit_disk) == 1);
}

TEST_CASE("publishing an already committed key keeps the first entry", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  const BuiltEntry first = test::sample_built("first cubin");
  const BuiltEntry second = test::sample_built("second cubin");
  CHECK(t.cache.publish(key, first.manifest, first.cubin) == PublishOutcome::published);
  CHECK(t.cache.publish(key, second.manifest, second.cubin) == PublishOutcome::kept_existing);
  const LookupResult found = t.cache.lookup(key);
  REQUIRE(found.hit());
  CHECK(found.entry->cubin == first.cubin);
  CHECK(test::list_dir(t.cache.entry_dir(key)) == std::vector<std::string>{"kernel.cubin", "manifest.json"});
  CHECK(t.cache.stats().get(Statistic::publish_kept_existing) == 1);
}

TEST_CASE("a missing entry is a not_found miss, never an exception", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  LookupResult r;
  REQUIRE_NOTHROW(r = t.cache.lookup(test::sample_key()));
  CHECK_FALSE(r.hit());
  CHECK(r.miss == MissReason::not_found);
  CHECK(t.cache.stats().get(Statistic::miss_not_found) == 1);
}

TEST_CASE("the manifest is the commit marker: a cubin without one is not an entry", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  const std::string dir = t.cache.entry_dir(key);
  REQUIRE(::mkdir(dir.substr(0, dir.rfind('/')).c_str(), 0700) == 0);
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  test::write_text(dir + "/kernel.cubin", "half-published");
  CHECK(t.cache.lookup(key).miss == MissReason::not_found);
  CHECK(quarantined(t.cache, key).empty()); // not_found is not a bad entry

  const BuiltEntry built = test::sample_built();
  CHECK(t.cache.publish(key, built.manifest, built.cubin) == PublishOutcome::published);
  const LookupResult found = t.cache.lookup(key);
  REQUIRE(found.hit());
  CHECK(found.entry->cubin == built.cubin);
  CHECK(quarantined(t.cache, key).size() == 1); // the leftover was moved aside
}

TEST_CASE("a symlink or a file in an entry's place is quarantined, not followed, and replaced", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const std::string elsewhere = s / "elsewhere";
  REQUIRE(::mkdir(elsewhere.c_str(), 0700) == 0);
  test::write_text(elsewhere + "/keep.txt", "not the cache's");
  for (const bool symlink : {true, false}) {
    const CacheKey key = test::sample_key(symlink ? "linked" : "file");
    const std::string dir = t.cache.entry_dir(key);
    ::mkdir(dir.substr(0, dir.rfind('/')).c_str(), 0700);
    if (symlink) {
      REQUIRE(::symlink(elsewhere.c_str(), dir.c_str()) == 0);
    } else {
      test::write_text(dir, "a file");
    }
    REQUIRE(list_entries(*t.cache.config().root).size() == 1);
    CHECK(list_entries(*t.cache.config().root)[0].problem ==
          (symlink ? "not a directory (a symlink)" : "not a directory (a file)"));
    const LookupResult miss = t.cache.lookup(key);
    CHECK(miss.miss == MissReason::corrupt_manifest);
    CHECK_THAT(miss.detail, Catch::Contains("is not a directory"));
    CHECK(quarantined(t.cache, key).size() == 1);
    int builds = 0;
    t.cache.get_or_build(key, [&] {
      ++builds;
      return test::sample_built();
    });
    CHECK(builds == 1);
    CHECK(t.cache.lookup(key).hit()); // published in its place: no compile on the next run
    CHECK(test::read_text_file(elsewhere + "/keep.txt") == "not the cache's");
    CHECK(test::list_dir(elsewhere).size() == 1);
    // the quarantined link or file out of the way for the next round
    for (const std::string& name : test::list_dir(dir.substr(0, dir.rfind('/')))) {
      if (name.find(".corrupt-") != std::string::npos) {
        ::unlink((dir.substr(0, dir.rfind('/')) + "/" + name).c_str());
      }
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("a corrupt cubin is a checksum miss, quarantined, rebuilt once", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  const BuiltEntry built = test::sample_built();
  t.cache.publish(key, built.manifest, built.cubin);
  test::write_text(t.cache.entry_dir(key) + "/kernel.cubin", "flipped bits, same length?");

  DiskCache reader(resolve_cache_config(test::scratch_env(s)));
  const LookupResult bad = reader.lookup(key);
  CHECK(bad.miss == MissReason::checksum_mismatch);
  CHECK_THAT(bad.detail, Catch::Matchers::Contains("kernel.cubin has"));
  CHECK(quarantined(reader, key).size() == 1);
  CHECK_FALSE(test::exists(reader.entry_dir(key)));
  CHECK(reader.lookup(key).miss == MissReason::not_found);
  CHECK(reader.stats().get(Statistic::miss_checksum) == 1);
  CHECK(reader.stats().get(Statistic::quarantine) == 1);

  int builds = 0;
  const CacheEntryPtr entry = reader.get_or_build(key, [&] {
    ++builds;
    return test::sample_built();
  });
  CHECK(builds == 1);
  CHECK(entry->cubin == built.cubin);
  CHECK(reader.lookup(key).hit());
}

TEST_CASE("get_or_build on a corrupt entry quarantines it and rebuilds exactly once", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  const BuiltEntry built = test::sample_built();
  t.cache.publish(key, built.manifest, built.cubin);
  const std::string cubin_path = t.cache.entry_dir(key) + "/kernel.cubin";
  std::string same_length = test::read_text_file(cubin_path);
  same_length[3] ^= 0x20;
  test::write_text(cubin_path, same_length);

  DiskCache fresh(resolve_cache_config(test::scratch_env(s)));
  int builds = 0;
  const CacheEntryPtr entry = fresh.get_or_build(key, [&] {
    ++builds;
    return test::sample_built();
  });
  CHECK(builds == 1);
  CHECK(entry->cubin == built.cubin);
  CHECK(fresh.stats().get(Statistic::miss_checksum) == 1);
  CHECK(quarantined(fresh, key).size() == 1);
}

TEST_CASE("an entry that is corrupt again after the rebuild throws CacheError", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  // Fault injection: every committed cubin is damaged right after the commit.
  t.cache.set_after_commit_hook([](const std::string& dir) { test::write_text(dir + "/kernel.cubin", "bad"); });
  int builds = 0;
  const auto build = [&] {
    ++builds;
    return test::sample_built();
  };
  CHECK_THROWS_AS(t.cache.get_or_build(key, build), kda::CacheError);
  CHECK(builds == 2); // the first build, then exactly one rebuild
  CHECK(quarantined(t.cache, key).size() == 2);
  CHECK_THROWS_WITH(t.cache.get_or_build(key, build),
                    Catch::Matchers::StartsWith("entry " + t.cache.entry_dir(key) +
                                                " is bad again after a rebuild (checksum_mismatch: "));
}

TEST_CASE("bad manifests are corrupt_manifest misses and quarantined", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  const BuiltEntry built = test::sample_built();
  const std::string manifest_path = t.cache.entry_dir(key) + "/manifest.json";
  for (const char* damage : {"truncated", "garbage", "field missing"}) {
    INFO(damage);
    REQUIRE(t.cache.publish(key, built.manifest, built.cubin) == PublishOutcome::published);
    const std::string text = test::read_text_file(manifest_path);
    std::string bad;
    if (std::string(damage) == "truncated") {
      bad = text.substr(0, text.size() - 20);
    } else if (std::string(damage) == "garbage") {
      bad = std::string("\x89PNG\r\n\x1a\n\0\0", 10);
    } else {
      auto j = nlohmann::json::parse(text);
      j.erase("cubin_sha256");
      bad = j.dump();
    }
    test::write_text(manifest_path, bad);
    const LookupResult r = t.cache.lookup(key);
    CHECK(r.miss == MissReason::corrupt_manifest);
    CHECK_FALSE(test::exists(t.cache.entry_dir(key)));
  }
  CHECK(t.cache.stats().get(Statistic::miss_corrupt) == 3);
  CHECK(quarantined(t.cache, key).size() == 3);
}

TEST_CASE("version, key and missing-cubin problems are distinct misses", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  const BuiltEntry built = test::sample_built();
  const std::string dir = t.cache.entry_dir(key);

  t.cache.publish(key, built.manifest, built.cubin);
  auto j = nlohmann::json::parse(test::read_text_file(dir + "/manifest.json"));
  j["manifest_version"] = k_manifest_version + 1;
  test::write_text(dir + "/manifest.json", j.dump());
  CHECK(t.cache.lookup(key).miss == MissReason::version_mismatch);

  t.cache.publish(key, built.manifest, built.cubin);
  j = nlohmann::json::parse(test::read_text_file(dir + "/manifest.json"));
  j["key_fields"]["target"] = "sm_80"; // the fields no longer hash to the key
  test::write_text(dir + "/manifest.json", j.dump());
  const LookupResult tampered = t.cache.lookup(key);
  CHECK(tampered.miss == MissReason::key_mismatch);
  CHECK_THAT(tampered.detail, Catch::Matchers::Contains("key_fields hash to"));

  // An entry copied under another key's directory.
  const CacheKey other = test::sample_key("d64.bf16.bshd");
  t.cache.publish(other, built.manifest, built.cubin);
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  for (const char* file : {"manifest.json", "kernel.cubin"}) {
    test::write_text(dir + "/" + file, test::read_text_file(t.cache.entry_dir(other) + "/" + file));
  }
  CHECK(t.cache.lookup(key).miss == MissReason::key_mismatch);

  t.cache.publish(key, built.manifest, built.cubin);
  REQUIRE(::unlink((dir + "/kernel.cubin").c_str()) == 0);
  CHECK(t.cache.lookup(key).miss == MissReason::checksum_mismatch);

  CHECK(t.cache.stats().get(Statistic::miss_version) == 1);
  CHECK(t.cache.stats().get(Statistic::miss_key) == 2);
  CHECK(t.cache.stats().get(Statistic::miss_checksum) == 1);
  CHECK(t.cache.stats().get(Statistic::quarantine) == 4);
  CHECK(t.cache.lookup(other).hit());
}

TEST_CASE("last_used_unix is refreshed at most once a day", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const std::int64_t now = std::time(nullptr);
  const CacheKey old_key = test::sample_key("old");
  const CacheKey recent_key = test::sample_key("recent");
  BuiltEntry built = test::sample_built();
  built.manifest.created_unix = now - 10 * 86400;
  built.manifest.last_used_unix = now - 2 * 86400;
  t.cache.publish(old_key, built.manifest, built.cubin);
  built.manifest.last_used_unix = now - 3600;
  t.cache.publish(recent_key, built.manifest, built.cubin);

  const LookupResult old_hit = t.cache.lookup(old_key);
  REQUIRE(old_hit.hit());
  CHECK(old_hit.entry->manifest.last_used_unix >= now);
  CHECK(old_hit.entry->manifest.created_unix == now - 10 * 86400);
  const auto on_disk = parse_manifest(test::read_text_file(t.cache.entry_dir(old_key) + "/manifest.json"));
  REQUIRE(on_disk.manifest.has_value());
  CHECK(on_disk.manifest->last_used_unix >= now);
  CHECK(t.cache.stats().get(Statistic::last_used_refresh) == 1);

  CHECK(t.cache.lookup(old_key).hit());
  const LookupResult recent_hit = t.cache.lookup(recent_key);
  REQUIRE(recent_hit.hit());
  CHECK(recent_hit.entry->manifest.last_used_unix == now - 3600);
  CHECK(t.cache.stats().get(Statistic::last_used_refresh) == 1);
  CHECK(test::list_dir(s / "cache/v1/tmp").empty());
}

TEST_CASE("a build that throws propagates and caches nothing", "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  const CacheKey key = test::sample_key();
  CHECK_THROWS_WITH(t.cache.get_or_build(key, []() -> BuiltEntry { throw std::runtime_error("nvrtc says no"); }),
                    "nvrtc says no");
  CHECK(t.cache.lookup(key).miss == MissReason::not_found);
  int builds = 0;
  t.cache.get_or_build(key, [&] {
    ++builds;
    return test::sample_built();
  });
  CHECK(builds == 1);
  CHECK(t.cache.stats().get(Statistic::compile_failed) == 1);
  CHECK(t.cache.stats().get(Statistic::compile) == 2);
}

TEST_CASE("a publish I/O failure: publish throws, get_or_build warns once and serves from memory",
          "[cache][disk]") {
  ScratchDir s;
  TestCache t(s);
  // A file where the staging directory should be: mkdtemp fails even for root.
  REQUIRE(::rmdir((s / "cache/v1/tmp").c_str()) == 0);
  test::write_text(s / "cache/v1/tmp", "in the way");
  const BuiltEntry built = test::sample_built();
  CHECK_THROWS_WITH(t.cache.publish(test::sample_key(), built.manifest, built.cubin),
                    Catch::Matchers::StartsWith("cannot create staging directory " + s / "cache/v1/tmp/") &&
                        Catch::Matchers::EndsWith(": Not a directory"));

  reset_warnings_for_testing();
  int builds = 0;
  const auto build = [&] {
    ++builds;
    return test::sample_built();
  };
  const CacheEntryPtr a = t.cache.get_or_build(test::sample_key("a"), build);
  const CacheEntryPtr b = t.cache.get_or_build(test::sample_key("b"), build);
  CHECK(a->dir.empty());
  CHECK(a->cubin == built.cubin);
  CHECK(b->manifest.cubin_sha256 == sha256_hex(built.cubin));
  CHECK(builds == 2);
  CHECK(t.warnings.size() == 1);
  CHECK(t.cache.stats().get(Statistic::publish_failed) == 3);
  t.cache.get_or_build(test::sample_key("a"), build);
  CHECK(builds == 2);
  reset_warnings_for_testing();
}

TEST_CASE("statistics count hits, misses and compiles", "[cache][disk][stats]") {
  ScratchDir s;
  const CacheKey key = test::sample_key();
  const auto build = [] { return test::sample_built(); };
  {
    TestCache t(s);
    t.cache.get_or_build(key, build);
    t.cache.get_or_build(key, build);
    t.cache.get_or_build(key, build);
    const nlohmann::json stats = t.cache.stats_json();
    CHECK(stats["miss_not_found"] == 1);
    CHECK(stats["compile"] == 1);
    CHECK(stats["publish"] == 1);
    CHECK(stats["hit_memory"] == 2);
    CHECK(stats["hit_disk"] == 0);
    CHECK(stats.size() == k_statistic_count);
  }
  TestCache second(s);
  second.cache.get_or_build(key, build);
  second.cache.get_or_build(key, build);
  CHECK(second.cache.stats().get(Statistic::hit_disk) == 1);
  CHECK(second.cache.stats().get(Statistic::hit_memory) == 1);
  CHECK(second.cache.stats().get(Statistic::compile) == 0);
  for (std::size_t i = 0; i < k_statistic_count; ++i) {
    CHECK_FALSE(statistic_name(static_cast<Statistic>(i)).empty());
    CHECK_FALSE(statistic_description(static_cast<Statistic>(i)).empty());
  }
  for (std::size_t i = 0; i < k_miss_reason_count; ++i) {
    const auto reason = static_cast<MissReason>(i);
    CHECK(statistic_name(miss_statistic(reason)).substr(0, 5) == "miss_");
  }
  CHECK(miss_reason_name(MissReason::checksum_mismatch) == "checksum_mismatch");
}
