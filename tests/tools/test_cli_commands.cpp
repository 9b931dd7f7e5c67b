// The commands beyond `schedule`: their output and exit codes on a machine
// without a GPU (as CI is). The kernel cache is the shared test cache
// (KDAJIT_CACHE_DIR set by ctest).
#include "test_support.hpp"
#include "tools/exit_codes.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <nlohmann/json.hpp>

using namespace kda;
using Catch::Contains;

TEST_CASE("compile fills the cache and cache ls lists the entry", "[tools][cli]") {
  const test::CliRun compiled =
      test::run_kdajit({"compile", "--schedule", "portable_c16", "--target", "sm_90", "--json"});
  REQUIRE(compiled.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(compiled.out.substr(compiled.out.find('{')));
  REQUIRE(j["results"].size() == 1);
  const std::string key = j["results"][0]["key"];
  CHECK(j["results"][0]["target"] == "sm_90");
  CHECK(j["results"][0]["shape"] == "d128.in_bf16.state_bf16.fixed");

  const test::CliRun listed = test::run_kdajit({"cache", "ls", "--json"});
  REQUIRE(listed.exit_code == tools::k_exit_ok);
  const nlohmann::json entries = nlohmann::json::parse(listed.out)["entries"];
  bool found = false;
  for (const auto& e : entries) {
    found = found || (e["key"] == key && e["schedule"] == "portable_c16" && e["target"] == "sm_90");
  }
  CHECK(found);

  // A schedule without a generator is refused when named, skipped under --all.
  const test::CliRun refused =
      test::run_kdajit({"compile", "--schedule", test::source_path("tests/schedules/sm120_m64_no_generator.json")});
  CHECK(refused.exit_code == tools::k_exit_invalid_schedule);
  CHECK_THAT(refused.err, Contains("no code generator yet for a warp_mma fused design with chunk 32 and m_tile 64"));
  CHECK(test::run_kdajit({"compile"}).exit_code == tools::k_exit_usage);
  CHECK(test::run_kdajit({"cache", "frob"}).exit_code == tools::k_exit_usage);
}

TEST_CASE("route explains the choice on a simulated device", "[tools][cli]") {
  const test::CliRun h200 = test::run_kdajit({"route", "--cc", "9.0", "--sms", "132", "--heads", "96"});
  CHECK(h200.exit_code == tools::k_exit_ok);
  CHECK_THAT(h200.out, Contains("portable_c16: eligible on sm_90"));
  CHECK_THAT(h200.out, Contains("sm100_m128_c32: not eligible: no target for CC 9.0"));
  CHECK_THAT(h200.out, Contains("sm90_wgmma_c16: eligible on sm_90a"));
  CHECK_THAT(h200.out, Contains("sm90_wgmma_c32: eligible on sm_90a"));
  // the shipped table (tuning/measured.json) decides among them: 96 pairs fill one wave
  CHECK_THAT(h200.out, Contains("tuning table: sm90_wgmma_c32 for cc9.0-sm132 / one_wave"));
  CHECK_THAT(h200.out, Contains("chosen: sm90_wgmma_c32 on sm_90a"));
  // no entry for this SM count: the CC's measured table, borrowed
  const test::CliRun other = test::run_kdajit({"route", "--cc", "9.0", "--sms", "114", "--heads", "96"});
  CHECK_THAT(other.out, Contains("tuning table (borrowed from cc9.0-sm132 for cc9.0-sm114, class by its 114 SMs): "
                                 "sm90_wgmma_c32 for cc9.0-sm132 / one_wave"));
  CHECK_THAT(other.out, Contains("chosen: sm90_wgmma_c32 on sm_90a"));
  // 1,024 sequences of 8 tokens: the measured tiny-sequence entry; 256 of 64: the short-sequence one
  const test::CliRun tiny8 = test::run_kdajit({"route", "--cc", "9.0", "--sms", "132", "--heads", "96", "--layout",
                                               "packed", "--sequences", "1024", "--tokens", "8"});
  CHECK(tiny8.exit_code == tools::k_exit_ok);
  CHECK_THAT(tiny8.out, Contains("1024 sequences of 8 tokens x 96 heads"));
  CHECK_THAT(tiny8.out, Contains("tuning table: sm90_wgmma_c16_fused for cc9.0-sm132 / many_tiny"));
  CHECK_THAT(tiny8.out, Contains("chosen: sm90_wgmma_c16_fused on sm_90a"));
  const test::CliRun short64 = test::run_kdajit({"route", "--cc", "9.0", "--sms", "132", "--heads", "32", "--layout",
                                                 "packed", "--sequences", "256", "--tokens", "64"});
  CHECK(short64.exit_code == tools::k_exit_ok);
  CHECK_THAT(short64.out, Contains("tuning table: sm90_wgmma_c16_persistent for cc9.0-sm132 / many_short"));
  // 16 sequences of 8 and of 16 tokens x 8 heads: a tiny- and a short-sequence
  // class none measured: the fill's entry for longer sequences, labelled
  const test::CliRun few8 = test::run_kdajit({"route", "--cc", "9.0", "--sms", "132", "--heads", "8", "--layout",
                                              "packed", "--sequences", "16", "--tokens", "8"});
  CHECK(few8.exit_code == tools::k_exit_ok);
  CHECK_THAT(few8.out, Contains("one_wave (no one_wave_tiny or one_wave_short entry)"));
  const test::CliRun few16 = test::run_kdajit({"route", "--cc", "9.0", "--sms", "132", "--heads", "8", "--layout",
                                               "packed", "--sequences", "16", "--tokens", "16"});
  CHECK(few16.exit_code == tools::k_exit_ok);
  CHECK_THAT(few16.out, Contains("one_wave (no one_wave_short entry)"));
  const test::CliRun b200 = test::run_kdajit({"route", "--cc", "10.0", "--sms", "148"});
  CHECK(b200.exit_code == 0);
  CHECK_THAT(b200.out, Contains("sm100_m128_c32: eligible on sm_100f"));
  CHECK_THAT(b200.out, Contains("sm100_m64_c32: eligible on sm_100f"));
  CHECK_THAT(b200.out, Contains("static preference: portable_c16"));   // no measured table for CC 10.0
  CHECK_THAT(b200.out, Contains("chosen: portable_c16 on sm_100f"));
  const test::CliRun m128 = test::run_kdajit({"route", "--cc", "10.0", "--sms", "148", "--schedule", "sm100_m128_c32"});
  CHECK(m128.exit_code == tools::k_exit_ok);
  CHECK_THAT(m128.out, Contains("chosen: sm100_m128_c32 on sm_100f"));
  const test::CliRun sm120 = test::run_kdajit({"route", "--cc", "12.0", "--sms", "84", "--schedule", "sm120_c32"});
  CHECK(sm120.exit_code == tools::k_exit_ok);
  CHECK_THAT(sm120.out, Contains("sm120_c32: eligible on sm_120a"));
  CHECK_THAT(sm120.out, Contains("not self-tested here (kdajit selftest): ranked last"));
  CHECK_THAT(sm120.out, Contains("chosen: sm120_c32 on sm_120a"));
  // without --schedule, an SM120 design nobody has self-tested is never chosen over the portable family
  const test::CliRun sm120_default = test::run_kdajit({"route", "--cc", "12.0", "--sms", "84"});
  CHECK_THAT(sm120_default.out, Contains("chosen: portable_c16 on sm_120a"));
  CHECK(test::run_kdajit({"route", "--cc", "nine"}).exit_code == tools::k_exit_usage);
}

TEST_CASE("GPU commands say so without a GPU", "[tools][cli]") {
  for (const char* command : {"bench", "verify", "tune", "accuracy", "selftest"}) {
    INFO(command);
    const test::CliRun run = test::run_kdajit({command});
    if (run.exit_code == tools::k_exit_no_device) {
      CHECK_THAT(run.err, Contains("needs a GPU"));
    } else {
      WARN("a GPU is present: " << command << " ran (exit " << run.exit_code << ")");
    }
  }
}

TEST_CASE("emit --plan lists the entry points of a plan", "[tools][cli]") {
  const test::CliRun run =
      test::run_kdajit({"emit", "--schedule", "portable_c16_m64", "--target", "sm_120a", "--layout", "packed", "--plan"});
  CHECK(run.exit_code == tools::k_exit_ok);
  CHECK_THAT(run.out, Contains("kda_prefill_portable_c16_m64_chunk_offsets"));
  CHECK_THAT(run.out, Contains("kda_prefill_portable_c16_m64_recurrence: 128 threads"));
  CHECK(test::run_kdajit({"emit", "--schedule", "nope", "--target", "sm_90"}).exit_code == tools::k_exit_usage);
}

TEST_CASE("env --json: versions, devices, cache directories, variables in effect", "[tools][cli]") {
  ::setenv("KDAJIT_MAX_BYTES", "3G", 1); // read by `cache gc` only
  const test::CliRun run = test::run_kdajit({"env", "--json"});
  REQUIRE(run.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  CHECK(j["kdajit"]["generator_id"].get<std::string>().rfind("kdajit-", 0) == 0);
  CHECK((j["nvrtc"].contains("version") || j["nvrtc"].contains("error")));
  CHECK(j["driver"].contains("available"));
  CHECK(j["devices"].is_array());
  if (!j["driver"]["available"].get<bool>()) {
    CHECK(j["devices"].empty()); // CI: no GPU
  } else {
    for (const auto& d : j["devices"]) {
      CHECK(d.contains("cc"));
      CHECK(d.contains("routes_to"));
    }
  }
  CHECK(j["cache"].contains("root_candidates"));
  CHECK(j["environment"]["KDAJIT_MAX_BYTES"] == "3G");
  CHECK(j["bundles"].is_array());
  CHECK(j["jit"].is_boolean());
  const test::CliRun text = test::run_kdajit({"env"});
  ::unsetenv("KDAJIT_MAX_BYTES");
  CHECK_THAT(text.out, Contains("cache: "));
  CHECK_THAT(text.out, Contains("KDAJIT_MAX_BYTES=3G"));
  CHECK(test::run_kdajit({"env", "extra"}).exit_code == tools::k_exit_usage);
}

TEST_CASE("route --json and emit --json", "[tools][cli]") {
  const test::CliRun r = test::run_kdajit({"route", "--cc", "9.0", "--sms", "132", "--heads", "96", "--json"});
  REQUIRE(r.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schedule"] == "sm90_wgmma_c32");
  CHECK(j["target"] == "sm_90a");
  CHECK_THAT(j["explanation"].get<std::string>(), Contains("chosen: sm90_wgmma_c32 on sm_90a"));
  const test::CliRun e =
      test::run_kdajit({"emit", "--schedule", "portable_c16", "--target", "sm_90", "--plan", "--json"});
  REQUIRE(e.exit_code == tools::k_exit_ok);
  const nlohmann::json p = nlohmann::json::parse(e.out);
  CHECK(p["file_name"] == "kda_prefill_portable_c16.sm_90.d128.in_bf16.state_bf16.fixed.cu");
  REQUIRE(p["entries"].size() == 2);
  CHECK(p["entries"][1]["entry"] == "kda_prefill_portable_c16_recurrence");
  CHECK_FALSE(p.contains("source"));
}

TEST_CASE("cache verify --load: the cubins for this GPU load with the manifest's registers", "[gpu][tools][cli]") {
  REQUIRE(test::run_kdajit({"compile", "--schedule", "portable_c16", "--target", "sm_90"}).exit_code ==
          tools::k_exit_ok);
  const test::CliRun run = test::run_kdajit({"cache", "verify", "--load", "--json"});
  INFO(run.out << run.err);
  CHECK(run.exit_code == tools::k_exit_ok);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  CHECK(j["bad"] == 0);
  CHECK(j["entries"].size() > j["not_loaded"].size()); // at least the sm_90 entry was loaded
}
