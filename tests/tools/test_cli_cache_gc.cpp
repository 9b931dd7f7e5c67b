// kdajit cache gc and cache clear on a scratch cache (--cache-dir): what they
// remove, their output, --json and exit codes. The shared test cache is never
// touched.
#include "cache/disk_cache.hpp"
#include "cache/list_entries.hpp"
#include "cache/cache_test_support.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/kernel_registry.hpp"
#include "test_support.hpp"
#include "tools/exit_codes.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>

using namespace kda;
using Catch::Contains;

namespace {

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A scratch cache with entries of the current generator and toolchain
// (schedule "fresh", "week", "month": last used 0, 7 and 30 days ago) and one
// of an older generator ("orphan"), 1,000-byte cubins each.
struct ScratchCache {
  ScratchCache() : config(cache::resolve_cache_config(cache::test::scratch_env(scratch))), cache(config) {
    add("fresh", 0, false);
    add("week", 7, false);
    add("month", 30, false);
    add("orphan", 1, true);
  }

  void add(const std::string& name, std::int64_t days, bool orphan) {
    const cache::CurrentIdentity id = KernelRegistry::instance().current_identity();
    cache::CacheKeyFields f = cache::test::sample_fields();
    f.layout_version = id.layout_version;
    f.abi_version = id.abi_version;
    f.generator_id = orphan ? "kdajit-0.0.1-emit1-0000000000000000" : id.generator_id;
    f.nvrtc_version = id.nvrtc_version;
    f.nvrtc_build = id.nvrtc_build;
    f.shape_key = name;
    cache::BuiltEntry built = cache::test::sample_built(std::string(1000, 'x'));
    built.manifest.launch["schedule"] = name;
    built.manifest.last_used_unix = now_unix() - days * 86'400;
    built.manifest.created_unix = built.manifest.last_used_unix;
    REQUIRE(cache.publish(cache::make_cache_key(f), built.manifest, built.cubin) == cache::PublishOutcome::published);
  }

  std::vector<std::string> schedules() const {
    std::vector<std::string> out;
    for (const cache::ListedEntry& e : cache::list_entries(*config.root)) {
      out.push_back(e.manifest->launch.value("schedule", std::string()));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  cache::test::ScratchDir scratch;
  cache::CacheConfig config;
  cache::DiskCache cache;
};

// The largest entry (they differ by a few bytes: the names are in the manifest,
// and which one lists first depends on the keys, i.e. on the generator id).
std::uint64_t entry_bytes(const ScratchCache& c) {
  std::uint64_t most = 0;
  for (const cache::ListedEntry& e : cache::list_entries(*c.config.root)) {
    most = std::max<std::uint64_t>(most, e.bytes_on_disk);
  }
  return most;
}

} // namespace

TEST_CASE("cache gc: the cap evicts the orphan first, then the least recently used", "[tools][cli][gc]") {
  ScratchCache c;
  const std::string root = *c.config.root;
  const std::string cap = std::to_string(2 * entry_bytes(c));
  const test::CliRun dry = test::run_kdajit({"cache", "gc", "--cache-dir", root, "--max-bytes", cap, "--dry-run"});
  CHECK(dry.exit_code == tools::k_exit_ok);
  CHECK_THAT(dry.out, Contains("would remove"));
  CHECK_THAT(dry.out, Contains("  orphan sm_90a  "));
  CHECK_THAT(dry.out, Contains("  month sm_90a  "));
  CHECK_THAT(dry.out, Contains("orphan: generator kdajit-0.0.1-emit1-0000000000000000"));
  CHECK_THAT(dry.out, Contains("over the cap, least recently used"));
  CHECK_THAT(dry.out, Contains("would remove 2 entries"));
  CHECK(c.schedules().size() == 4); // a dry run removes nothing

  const test::CliRun run = test::run_kdajit({"cache", "gc", "--cache-dir", root, "--max-bytes", cap, "--json"});
  CHECK(run.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  CHECK(j["dry_run"] == false);
  CHECK(j["entries_before"] == 4);
  REQUIRE(j["removed"].size() == 2);
  CHECK_THAT(j["removed"][0]["reason"].get<std::string>(), Contains("orphan"));
  CHECK(j["bytes_after"].get<std::uint64_t>() <= 2 * entry_bytes(c));
  CHECK(c.schedules() == std::vector<std::string>{"fresh", "week"});
}

TEST_CASE("cache gc: --orphans and --older-than", "[tools][cli][gc]") {
  ScratchCache c;
  const std::string root = *c.config.root;
  CHECK(test::run_kdajit({"cache", "gc", "--cache-dir", root, "--orphans"}).exit_code == tools::k_exit_ok);
  CHECK(c.schedules() == std::vector<std::string>{"fresh", "month", "week"});
  const test::CliRun old = test::run_kdajit({"cache", "gc", "--cache-dir", root, "--older-than", "10"});
  CHECK(old.exit_code == tools::k_exit_ok);
  CHECK_THAT(old.out, Contains("unused for 30.0 days"));
  CHECK(c.schedules() == std::vector<std::string>{"fresh", "week"});
  // the default cap (2 GiB) keeps everything
  CHECK_THAT(test::run_kdajit({"cache", "gc", "--cache-dir", root}).out, Contains("removed 0 entries"));
}

TEST_CASE("cache gc and clear: bad arguments are usage errors", "[tools][cli][gc]") {
  ScratchCache c;
  const std::string root = *c.config.root;
  CHECK(test::run_kdajit({"cache", "gc", "--cache-dir", root, "--max-bytes", "lots"}).exit_code == tools::k_exit_usage);
  // 2^34 G would wrap around to a cap of 0 bytes and empty the cache
  const test::CliRun huge = test::run_kdajit({"cache", "gc", "--cache-dir", root, "--max-bytes", "17179869184G"});
  CHECK(huge.exit_code == tools::k_exit_usage);
  CHECK_THAT(huge.err, Contains("at most 1 EiB, not '17179869184G'"));
  CHECK(test::run_kdajit({"cache", "gc", "--cache-dir", root, "--older-than", "soon"}).exit_code ==
        tools::k_exit_usage);
  CHECK(test::run_kdajit({"cache", "gc", "--cache-dir", root + "/nope"}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"cache", "clear", "extra"}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"cache", "prune"}).exit_code == tools::k_exit_usage);
  CHECK(c.schedules().size() == 4);
}

TEST_CASE("cache clear removes every entry", "[tools][cli][gc]") {
  ScratchCache c;
  const std::string root = *c.config.root;
  const test::CliRun run = test::run_kdajit({"cache", "clear", "--cache-dir", root, "--json"});
  CHECK(run.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  CHECK(j["removed"] == 4);
  CHECK(j["skipped"].empty());
  CHECK(c.schedules().empty());
  const test::CliRun listed = test::run_kdajit({"cache", "ls", "--cache-dir", root, "--json"});
  CHECK(nlohmann::json::parse(listed.out)["entries"].empty());
}

TEST_CASE("cache ls filters, cache show and cache verify", "[tools][cli][gc]") {
  ScratchCache c;
  const std::string root = *c.config.root;
  const nlohmann::json stale =
      nlohmann::json::parse(test::run_kdajit({"cache", "ls", "--cache-dir", root, "--stale", "--json"}).out);
  REQUIRE(stale["entries"].size() == 1);
  CHECK(stale["entries"][0]["schedule"] == "orphan");
  CHECK_THAT(stale["entries"][0]["stale"].get<std::string>(), Contains("orphan: generator"));
  const nlohmann::json week =
      nlohmann::json::parse(test::run_kdajit({"cache", "ls", "--cache-dir", root, "--schedule", "week", "--json"}).out);
  REQUIRE(week["entries"].size() == 1);
  const std::string key = week["entries"][0]["key"];
  CHECK(nlohmann::json::parse(
            test::run_kdajit({"cache", "ls", "--cache-dir", root, "--target", "sm_100a", "--json"}).out)["entries"]
            .empty());

  const test::CliRun shown = test::run_kdajit({"cache", "show", key.substr(0, 12), "--cache-dir", root, "--log"});
  CHECK(shown.exit_code == tools::k_exit_ok);
  CHECK_THAT(shown.out, Contains("entry " + key));
  CHECK_THAT(shown.out, Contains("schedule week  target sm_90a  shape week"));
  CHECK_THAT(shown.out, Contains("entry kda_prefill_test {\"registers\":128"));
  CHECK_THAT(shown.out, Contains("== compile.log\n(none)")); // the scratch entries were published without a log
  const nlohmann::json j =
      nlohmann::json::parse(test::run_kdajit({"cache", "show", key.substr(0, 8), "--cache-dir", root, "--json"}).out);
  CHECK(j["manifest"]["key"] == key);
  CHECK(test::run_kdajit({"cache", "show", "ffff0000", "--cache-dir", root}).exit_code == tools::k_exit_not_found);
  CHECK(test::run_kdajit({"cache", "show", "xyz", "--cache-dir", root}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"cache", "show", "--cache-dir", root}).exit_code == tools::k_exit_usage);

  if (!runtime::driver_status().available) { // CI: --load needs a GPU
    CHECK(test::run_kdajit({"cache", "verify", "--load", "--cache-dir", root}).exit_code == tools::k_exit_no_device);
  }
  const test::CliRun ok = test::run_kdajit({"cache", "verify", "--cache-dir", root});
  CHECK(ok.exit_code == tools::k_exit_ok);
  CHECK_THAT(ok.out, Contains("4 entries checked, 0 bad, 1 stale"));
  // the orphan as an older kdajit build wrote it: a manifest without the key
  // fields this build's key encoding added, so its key does not recompute
  // here; stale, not bad, and its cubin still checked
  const std::string orphan_dir = stale["entries"][0]["dir"];
  nlohmann::json old_manifest = nlohmann::json::parse(cache::test::read_text_file(orphan_dir + "/manifest.json"));
  REQUIRE(old_manifest["key_fields"].erase("nvrtc_build") == 1);
  REQUIRE(old_manifest["key_fields"].erase("source_sha256") == 1);
  cache::test::write_text(orphan_dir + "/manifest.json", old_manifest.dump(2));
  const test::CliRun older = test::run_kdajit({"cache", "verify", "--cache-dir", root, "--json"});
  CHECK(older.exit_code == tools::k_exit_ok);
  const nlohmann::json o = nlohmann::json::parse(older.out);
  CHECK(o["bad"] == 0);
  CHECK(o["stale"] == 1);
  for (const auto& e : o["entries"]) {
    const bool is_orphan = orphan_dir.ends_with(e["key"].get<std::string>());
    CHECK(e["ok"] == true);
    CHECK((e["stale"].get<std::string>().find("another key encoding") != std::string::npos) == is_orphan);
  }
  // a flipped byte in one cubin
  const std::string cubin = std::string(week["entries"][0]["dir"]) + "/kernel.cubin";
  std::string bytes = cache::test::read_text_file(cubin);
  bytes[10] ^= 1;
  cache::test::write_text(cubin, bytes);
  const test::CliRun bad = test::run_kdajit({"cache", "verify", "--cache-dir", root, "--json"});
  CHECK(bad.exit_code == tools::k_exit_cache);
  const nlohmann::json v = nlohmann::json::parse(bad.out);
  CHECK(v["bad"] == 1);
  bool flagged = false;
  for (const auto& e : v["entries"]) {
    if (e["key"] == key) {
      flagged = e["ok"] == false && e["problem"].get<std::string>().find("checksum") != std::string::npos;
    }
  }
  CHECK(flagged);
  // a flipped byte in the older build's cubin is bad as well
  const std::string orphan_cubin = orphan_dir + "/kernel.cubin";
  std::string orphan_bytes = cache::test::read_text_file(orphan_cubin);
  orphan_bytes[3] ^= 1;
  cache::test::write_text(orphan_cubin, orphan_bytes);
  const test::CliRun both = test::run_kdajit({"cache", "verify", "--cache-dir", root});
  CHECK(both.exit_code == tools::k_exit_cache);
  CHECK_THAT(both.out, Contains("2 bad"));
  CHECK_THAT(both.out, Contains("checksum_mismatch"));
}

TEST_CASE("cache explain: present, or the nearest entry and its differing key fields", "[tools][cli][gc]") {
  // one real entry (portable_c16, sm_90, bf16 state, fixed layout) copied into a scratch cache
  const test::CliRun compiled =
      test::run_kdajit({"compile", "--schedule", "portable_c16", "--target", "sm_90", "--json"});
  REQUIRE(compiled.exit_code == tools::k_exit_ok);
  const nlohmann::json c = nlohmann::json::parse(compiled.out.substr(compiled.out.find('{')));
  const std::string key = c["results"][0]["key"];
  std::string source_dir;
  const nlohmann::json listed = nlohmann::json::parse(test::run_kdajit({"cache", "ls", "--json"}).out);
  for (const auto& e : listed["entries"]) {
    if (e.value("key", std::string()) == key) {
      source_dir = e["dir"];
    }
  }
  REQUIRE_FALSE(source_dir.empty());
  cache::test::ScratchDir s;
  const std::string root = s / "cache";
  const std::string shard = root + "/v1/entries/" + key.substr(0, 2);
  std::filesystem::create_directories(shard);
  std::filesystem::copy(source_dir, shard + "/" + key, std::filesystem::copy_options::recursive);

  const test::CliRun present =
      test::run_kdajit({"cache", "explain", "portable_c16", "--target", "sm_90", "--cache-dir", root});
  CHECK(present.exit_code == tools::k_exit_ok);
  CHECK_THAT(present.out, Contains("key " + key));
  CHECK_THAT(present.out, Contains("present: "));

  const test::CliRun absent = test::run_kdajit(
      {"cache", "explain", "portable_c16", "--target", "sm_90", "--state", "fp32", "--cache-dir", root, "--json"});
  CHECK(absent.exit_code == tools::k_exit_not_found);
  const nlohmann::json j = nlohmann::json::parse(absent.out);
  CHECK(j["present"] == false);
  CHECK(j["key_fields"]["shape_key"] == "d128.in_bf16.state_fp32.fixed");
  // the shape key, and so the emitted source
  REQUIRE(j["nearest"]["differences"].size() == 2);
  CHECK(j["nearest"]["key"] == key);
  CHECK(j["nearest"]["differences"][0]["field"] == "shape_key");
  CHECK(j["nearest"]["differences"][0]["entry"] == "d128.in_bf16.state_bf16.fixed");
  CHECK(j["nearest"]["differences"][1]["field"] == "source_sha256");
  CHECK(test::run_kdajit({"cache", "explain", "portable_c16"}).exit_code == tools::k_exit_usage);
}
