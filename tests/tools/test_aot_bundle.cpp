// kdajit aot build and the runtime lookup order (issue 6, items 1-2): a plan
// compiled into a bundle and fatbins; a registry serves the bundle's kernel
// with JIT off and an empty disk cache, so no NVRTC compile runs; without the
// bundle, JIT off is an error naming the key and the command that builds it;
// a bundle of another generator is skipped with a warning.
#include "cache/bundle.hpp"
#include "cache/cache_test_support.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/kernel_registry.hpp"
#include "test_support.hpp"
#include "tools/exit_codes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

using namespace kda;
using Catch::Contains;

namespace {

// portable_c16 for sm_90, bf16 state, fixed layout: the key the shared test
// cache compiles for other tests too.
std::string write_plan(const cache::test::ScratchDir& s) {
  const std::string plan = s / "plan.json";
  cache::test::write_text(plan, R"({"schedules": ["portable_c16"], "targets": ["sm_90"],
                                    "shapes": [{"state": "bf16", "layout": "fixed"}]})");
  return plan;
}

} // namespace

TEST_CASE("aot build writes a bundle and a fatbin per module", "[tools][cli][aot]") {
  cache::test::ScratchDir s;
  const test::CliRun run = test::run_kdajit({"aot", "build", "--plan", write_plan(s), "--out", s / "out", "--json"});
  REQUIRE(run.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  CHECK(j["entries"] == 1);
  CHECK(j["failed"].empty());
  REQUIRE(j["fatbins"].size() == 1);
  CHECK(std::filesystem::file_size(j["fatbins"][0].get<std::string>()) > 1000);
  const cache::Bundle b = cache::Bundle::read(s / "out/kdajit.kdab");
  REQUIRE(b.entries().size() == 1);
  CHECK(b.entries()[0].manifest.key_fields.target == "sm_90");
  CHECK(b.entries()[0].manifest.launch.value("schedule", std::string()) == "portable_c16");
  CHECK(test::run_kdajit({"aot", "build", "--plan", s / "missing.json", "--out", s / "x"}).exit_code ==
        tools::k_exit_io);
  CHECK(test::run_kdajit({"aot", "build", "--out", s / "x"}).exit_code == tools::k_exit_usage);
  cache::test::write_text(s / "bad-plan.json", R"({"schedules": "every", "targets": "listed", "shapes": []})");
  CHECK(test::run_kdajit({"aot", "build", "--plan", s / "bad-plan.json", "--out", s / "x"}).exit_code ==
        tools::k_exit_invalid_schedule); // bad content of the plan file
  // the shipped plan names every generated schedule for all its targets
  const nlohmann::json shipped = nlohmann::json::parse(test::read_text(test::source_path("aot/all-shipped.json")));
  CHECK(shipped["schedules"] == "all");
  CHECK(shipped["targets"] == "listed");
}

TEST_CASE("lookup order: a bundle serves the kernel without NVRTC; JIT off names what to build",
          "[tools][cli][aot]") {
  cache::test::ScratchDir s;
  REQUIRE(test::run_kdajit({"aot", "build", "--plan", write_plan(s), "--out", s / "out"}).exit_code ==
          tools::k_exit_ok);
  const Schedule& schedule = *find_shipped_schedule("portable_c16");
  const Target target = *find_target("sm_90");
  const ShapeKey shape;

  KernelRegistry registry(cache::resolve_cache_config(cache::test::scratch_env(s))); // an empty disk cache
  registry.set_jit_enabled(false);
  CHECK_THROWS_WITH(registry.prepare(schedule, target, shape),
                    Contains("is in no registered bundle and not in the kernel cache, and JIT is off") &&
                        Contains("kdajit compile --schedule portable_c16 --target sm_90 --state bf16 --layout fixed"));
  CHECK(registry.register_bundle(s / "out/kdajit.kdab") == 1);
  const auto kernel = registry.prepare(schedule, target, shape);
  CHECK(registry.bundle_hits() == 1);
  CHECK(registry.disk_cache().stats().get(cache::Statistic::compile) == 0);
  const cache::Bundle b = cache::Bundle::read(s / "out/kdajit.kdab");
  CHECK(kernel->entry->cubin == b.cubin(b.entries()[0]));
  CHECK(kernel->key.hex() == b.entries()[0].manifest.key);
}

TEST_CASE("a bundle of another generator is skipped with a warning; a corrupt one is refused", "[tools][cli][aot]") {
  cache::test::ScratchDir s;
  cache::BundleInput in;
  in.key_fields = cache::test::sample_fields();
  in.cubin = {1, 2, 3};
  const cache::Bytes other =
      cache::encode_bundle({"kdajit-0.0.1-emit1-0000000000000000", "2", "1", "13.0", "libnvrtc.so.13.0.88, 1 bytes"}, {in});
  const std::string path = s / "other.kdab";
  cache::test::write_text(path, std::string(other.begin(), other.end()));
  KernelRegistry registry(cache::resolve_cache_config(cache::test::scratch_env(s)));
  std::ostringstream warnings;
  CHECK(registry.register_bundle(path, &warnings) == 0);
  CHECK_THAT(warnings.str(), Contains("1 entry built by generator kdajit-0.0.1-emit1-0000000000000000"));
  CHECK_THAT(warnings.str(), Contains("skipped"));
  cache::test::write_text(s / "bad.kdab", "KDAJITB1 and then nothing useful");
  CHECK_THROWS_AS(registry.register_bundle(s / "bad.kdab"), CacheError);
}

TEST_CASE("a bundle serves whatever NVRTC this process has: entries match on every other key field",
          "[tools][cli][aot]") {
  cache::test::ScratchDir s;
  REQUIRE(test::run_kdajit({"aot", "build", "--plan", write_plan(s), "--out", s / "out"}).exit_code ==
          tools::k_exit_ok);
  const cache::Bundle built = cache::Bundle::read(s / "out/kdajit.kdab");
  REQUIRE(built.entries().size() == 1);
  // the same kernel as if another NVRTC had built it
  cache::BundleInput in;
  in.key_fields = built.entries()[0].manifest.key_fields;
  in.key_fields.nvrtc_version = "12.9";
  in.entry_points = built.entries()[0].manifest.entry_points;
  in.launch = built.entries()[0].manifest.launch;
  in.cubin = built.cubin(built.entries()[0]);
  cache::BundleIdentity id = built.identity();
  id.nvrtc_version = "12.9";
  const cache::Bytes bytes = cache::encode_bundle(id, {in});
  cache::test::write_text(s / "other-nvrtc.kdab", std::string(bytes.begin(), bytes.end()));

  KernelRegistry registry(cache::resolve_cache_config(cache::test::scratch_env(s)));
  registry.set_jit_enabled(false);
  REQUIRE(registry.register_bundle(s / "other-nvrtc.kdab") == 1);
  const auto kernel = registry.prepare(*find_shipped_schedule("portable_c16"), *find_target("sm_90"), ShapeKey{});
  CHECK(registry.bundle_hits() == 1);
  CHECK(kernel->key.fields().nvrtc_version == "12.9");
  CHECK(kernel->entry->cubin == in.cubin);
}

TEST_CASE("a bundle entry whose cubin is damaged is skipped with a warning; the lookup goes on to NVRTC",
          "[tools][cli][aot]") {
  cache::test::ScratchDir s;
  REQUIRE(test::run_kdajit({"aot", "build", "--plan", write_plan(s), "--out", s / "out"}).exit_code ==
          tools::k_exit_ok);
  // one byte of the cubin flipped (the payload ends the file)
  const std::string path = s / "out/kdajit.kdab";
  std::string bytes = test::read_text(path);
  const cache::Bundle good = cache::Bundle::read(path);
  bytes[bytes.size() - good.entries()[0].manifest.cubin_size / 2] ^= 0x40;
  cache::test::write_text(path, bytes);

  KernelRegistry registry(cache::resolve_cache_config(cache::test::scratch_env(s)));
  std::ostringstream warnings;
  registry.set_warning_stream(&warnings);
  REQUIRE(registry.register_bundle(path) == 1); // the index is fine; the cubin is checked when taken
  const auto kernel = registry.prepare(*find_shipped_schedule("portable_c16"), *find_target("sm_90"), ShapeKey{});
  CHECK(registry.bundle_hits() == 0);
  CHECK(registry.disk_cache().stats().get(cache::Statistic::compile) == 1);
  CHECK(kernel->key.hex() == good.entries()[0].manifest.key); // the same kernel, built by NVRTC
  CHECK_THAT(warnings.str(), Contains("kdajit.kdab") && Contains("entry skipped: the lookup goes on"));
}
