#include "cache/manifest.hpp"

#include "cache/sha256.hpp"
#include "cache_test_support.hpp"

#include <catch2/catch.hpp>

using namespace kda::cache;
using nlohmann::json;

namespace {

Manifest sample_manifest() {
  Manifest m;
  m.key_fields = test::sample_fields();
  m.key = make_cache_key(m.key_fields).hex();
  m.source_sha256 = sha256_hex("source");
  m.cubin_sha256 = sha256_hex("cubin");
  m.cubin_size = 5;
  m.entry_points = {{"kda_prefill_a", {{"registers", 168}, {"spill_bytes", 0}}}, {"kda_prefill_b", json::object()}};
  m.launch = {{"block", {384, 1, 1}}, {"dynamic_smem", 227328}};
  m.compile_ms = 812.5;
  m.producer = Producer::aot;
  m.created_unix = 1'700'000'000;
  m.last_used_unix = 1'700'000'100;
  return m;
}

} // namespace

TEST_CASE("manifest round-trips through JSON and text", "[cache][manifest]") {
  const Manifest m = sample_manifest();
  const ManifestParse from_json = manifest_from_json(to_json(m));
  REQUIRE(from_json.manifest.has_value());
  CHECK(*from_json.manifest == m);
  const ManifestParse from_text = parse_manifest(serialize_manifest(m));
  REQUIRE(from_text.manifest.has_value());
  CHECK(*from_text.manifest == m);
  CHECK(serialize_manifest(m).back() == '\n');
  for (const Producer p : {Producer::jit, Producer::aot, Producer::imported}) {
    CHECK(parse_producer(producer_name(p)) == p);
  }
  CHECK(producer_name(Producer::imported) == "import");
}

TEST_CASE("manifest golden form (bump k_manifest_version on an incompatible change)", "[cache][manifest]") {
  REQUIRE(k_manifest_version == 1);
  Manifest m = sample_manifest();
  m.entry_points.resize(1);
  m.key_fields.options = {"-O3"};
  m.key = std::string(64, 'a');
  m.source_sha256 = "";
  m.cubin_sha256 = std::string(64, 'b');
  CHECK(to_json(m).dump() ==
        R"({"compile_ms":812.5,"created_unix":1700000000,"cubin_sha256":")" + std::string(64, 'b') +
            R"(","cubin_size":5,"entry_points":[{"name":"kda_prefill_a","resources":{"registers":168,"spill_bytes":0}}],)"
            R"("key":")" + std::string(64, 'a') +
            R"(","key_fields":{"abi_version":"abi-1","generator_id":"kdagen-0.1.0+templates-0123456789abcdef",)"
            R"("layout_version":"v1","nvrtc_build":"libnvrtc.so.13.0.48, 104857600 bytes",)"
            R"("nvrtc_version":"nvrtc-13.0.48","options":["-O3"],)"
            R"("schedule_id":"8f4c0d2e5a1b3c7d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7",)"
            R"("shape_key":"d128.bf16.bshd","source_sha256":")" + std::string(64, '5') +
            R"(","target":"sm_90a"},"last_used_unix":1700000100,)"
            R"("launch":{"block":[384,1,1],"dynamic_smem":227328},"manifest_version":1,"producer":"aot",)"
            R"("source_sha256":""})");
}

TEST_CASE("a manifest missing any field is corrupt, not a crash", "[cache][manifest]") {
  const json full = to_json(sample_manifest());
  for (const auto& [name, value] : full.items()) {
    json broken = full;
    broken.erase(name);
    const ManifestParse parsed = manifest_from_json(broken);
    INFO(name);
    CHECK_FALSE(parsed.manifest.has_value());
    CHECK(parsed.failure == MissReason::corrupt_manifest);
    CHECK(parsed.message == "/" + name + ": missing");
  }
  for (const auto& [name, value] : full["key_fields"].items()) {
    if (name == "nvrtc_build" || name == "source_sha256") {
      continue; // absent from older kdajit builds' manifests: read as empty (a stale entry), below
    }
    json broken = full;
    broken["key_fields"].erase(name);
    const ManifestParse parsed = manifest_from_json(broken);
    INFO(name);
    CHECK(parsed.failure == MissReason::corrupt_manifest);
    CHECK(parsed.message == "/key_fields/" + name + ": missing");
  }
}

TEST_CASE("a manifest of an older kdajit, without nvrtc_build and source_sha256, reads as such", "[cache][manifest]") {
  json old = to_json(sample_manifest());
  old["key_fields"].erase("nvrtc_build");
  old["key_fields"].erase("source_sha256");
  const ManifestParse parsed = manifest_from_json(old);
  REQUIRE(parsed.manifest.has_value());
  CHECK(parsed.manifest->key_fields.nvrtc_build.empty());
  CHECK(parsed.manifest->key_fields.source_sha256.empty());
}

TEST_CASE("a manifest with a mistyped or bad value is corrupt", "[cache][manifest]") {
  struct Case {
    const char* pointer;
    json value;
    const char* message;
  };
  const Case cases[] = {
      {"/cubin_size", "5", "/cubin_size: expected a non-negative integer"},
      {"/cubin_size", -1, "/cubin_size: expected a non-negative integer"},
      {"/cubin_size", 5.5, "/cubin_size: expected a non-negative integer"},
      {"/key", "ABC", "/key: expected 64 lowercase hex characters"},
      {"/cubin_sha256", "", "/cubin_sha256: expected 64 lowercase hex characters"},
      {"/source_sha256", "xyz", "/source_sha256: expected 64 lowercase hex characters"},
      {"/producer", "gpu", "/producer: expected \"jit\", \"aot\" or \"import\", got \"gpu\""},
      {"/entry_points", json::object(), "/entry_points: expected an array"},
      {"/entry_points/0", "name", "/entry_points/0: expected an object"},
      {"/entry_points/0/name", "", "/entry_points/0/name: must not be empty"},
      {"/entry_points/1/resources", json::array(), "/entry_points/1/resources: expected an object"},
      {"/launch", json::array(), "/launch: expected an object"},
      {"/compile_ms", "fast", "/compile_ms: expected a non-negative number"},
      {"/created_unix", true, "/created_unix: expected a non-negative integer"},
      {"/key_fields/options/1", 7, "/key_fields/options/1: expected a string"},
      {"/key_fields/target", nullptr, "/key_fields/target: expected a string"},
      {"/manifest_version", "1", "/manifest_version: expected a non-negative integer"},
  };
  for (const Case& c : cases) {
    json broken = to_json(sample_manifest());
    broken[json::json_pointer(c.pointer)] = c.value;
    const ManifestParse parsed = manifest_from_json(broken);
    INFO(c.pointer);
    CHECK_FALSE(parsed.manifest.has_value());
    CHECK(parsed.failure == MissReason::corrupt_manifest);
    CHECK(parsed.message == c.message);
  }
}

TEST_CASE("another manifest version is a version mismatch", "[cache][manifest]") {
  json other = to_json(sample_manifest());
  other["manifest_version"] = k_manifest_version + 1;
  other.erase("cubin_size"); // the version decides before anything else is read
  const ManifestParse parsed = manifest_from_json(other);
  CHECK_FALSE(parsed.manifest.has_value());
  CHECK(parsed.failure == MissReason::version_mismatch);
  CHECK(parsed.message == "manifest version 2 (this build reads version 1)");
}

TEST_CASE("garbage or truncated manifest text is corrupt", "[cache][manifest]") {
  const std::string text = serialize_manifest(sample_manifest());
  for (const std::string& bad : {std::string(), std::string("\0\1\2garbage", 10), text.substr(0, text.size() / 2),
                                 std::string("[1, 2]"), std::string("null")}) {
    const ManifestParse parsed = parse_manifest(bad);
    CHECK_FALSE(parsed.manifest.has_value());
    CHECK(parsed.failure == MissReason::corrupt_manifest);
    CHECK_FALSE(parsed.message.empty());
  }
}

TEST_CASE("unknown manifest keys are tolerated", "[cache][manifest]") {
  json extra = to_json(sample_manifest());
  extra["added_later"] = {{"x", 1}};
  const ManifestParse parsed = manifest_from_json(extra);
  REQUIRE(parsed.manifest.has_value());
  CHECK(*parsed.manifest == sample_manifest());
}
