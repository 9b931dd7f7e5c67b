#include "cache/cache_key.hpp"

#include "cache/sha256.hpp"
#include "cache_test_support.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <set>

using namespace kda::cache;
using kda::cache::test::sample_fields;

TEST_CASE("cache key is stable and has the documented shape", "[cache][key]") {
  const CacheKey a = make_cache_key(sample_fields());
  const CacheKey b = make_cache_key(sample_fields());
  CHECK(a == b);
  CHECK(a.hex() == b.hex());
  CHECK(is_sha256_hex(a.hex()));
  CHECK(a.short_id() == a.hex().substr(0, 16));
  CHECK(a.shard() == a.hex().substr(0, 2));
  CHECK(a.fields() == sample_fields());
  CHECK(a.hex() == sha256_hex(encode_cache_key_fields(sample_fields())));
}

TEST_CASE("cache key golden value (bump k_key_encoding_version if this changes)", "[cache][key]") {
  // Computed independently (Python, from the grammar in cache_key.hpp).
  REQUIRE(k_key_encoding_version == 2);
  CHECK(make_cache_key(sample_fields()).hex() == "b3ff34799daaa829bb480314e1e69201cff1c0a4094858a9e35545242c6f2d01");
}

TEST_CASE("changing any key field changes the key", "[cache][key]") {
  using Edit = std::function<void(CacheKeyFields&)>;
  const std::vector<std::pair<const char*, Edit>> edits = {
      {"layout_version", [](CacheKeyFields& f) { f.layout_version = "v2"; }},
      {"abi_version", [](CacheKeyFields& f) { f.abi_version = "abi-2"; }},
      {"generator_id", [](CacheKeyFields& f) { f.generator_id += "x"; }},
      {"schedule_id", [](CacheKeyFields& f) { f.schedule_id[0] = '9'; }},
      {"shape_key", [](CacheKeyFields& f) { f.shape_key = "d64.bf16.bshd"; }},
      {"target", [](CacheKeyFields& f) { f.target = "sm_90"; }},
      {"nvrtc_version", [](CacheKeyFields& f) { f.nvrtc_version = "nvrtc-13.0.49"; }},
      {"option added", [](CacheKeyFields& f) { f.options.push_back("-lineinfo"); }},
      {"option removed", [](CacheKeyFields& f) { f.options.pop_back(); }},
      {"option changed", [](CacheKeyFields& f) { f.options[0] = "--std=c++20"; }},
      {"options reordered", [](CacheKeyFields& f) { std::swap(f.options[0], f.options[1]); }},
      {"empty option added", [](CacheKeyFields& f) { f.options.push_back(""); }},
  };
  std::set<std::string> keys = {make_cache_key(sample_fields()).hex()};
  for (const auto& [name, edit] : edits) {
    CacheKeyFields f = sample_fields();
    edit(f);
    INFO(name);
    CHECK(keys.insert(make_cache_key(f).hex()).second);
  }
}

TEST_CASE("cache key encoding is unambiguous at field boundaries", "[cache][key]") {
  CacheKeyFields a = sample_fields();
  CacheKeyFields b = sample_fields();
  a.options = {"ab", "c"};
  b.options = {"a", "bc"};
  CHECK(make_cache_key(a).hex() != make_cache_key(b).hex());
  a = sample_fields();
  b = sample_fields();
  a.shape_key = "ab";
  a.target = "c";
  b.shape_key = "a";
  b.target = "bc";
  CHECK(make_cache_key(a).hex() != make_cache_key(b).hex());
  a = sample_fields();
  b = sample_fields();
  a.options = {};
  b.options = {""};
  CHECK(make_cache_key(a).hex() != make_cache_key(b).hex());
}

TEST_CASE("canonical_json_hash ignores key order and whitespace", "[cache][key]") {
  const auto x = nlohmann::json::parse(R"({"b": [true, null], "a": 1})");
  const auto y = nlohmann::json::parse(R"({ "a":1,
                                           "b":[true,null] })");
  CHECK(canonical_json_hash(x) == canonical_json_hash(y));
  CHECK(canonical_json_hash(x) == "1cc69c7fa23616ca2ec3ee70d24390a6225c8832db8a4c814c7e0e7f942f8668");
  CHECK(canonical_json_hash(nlohmann::json::parse(R"({"a": 2, "b": [true, null]})")) != canonical_json_hash(x));
  const auto nested1 = nlohmann::json::parse(R"({"smem": {"z": 1, "y": {"q": 2, "p": 3}}})");
  const auto nested2 = nlohmann::json::parse(R"({"smem": {"y": {"p": 3, "q": 2}, "z": 1}})");
  CHECK(canonical_json_hash(nested1) == canonical_json_hash(nested2));
}
