// The bundle format (cache/bundle.hpp): round trip, determinism, the golden
// bytes of a small bundle (an unversioned format change fails here), and
// corrupt or truncated bundles refused with a message saying what is wrong.
#include "cache/bundle.hpp"
#include "cache/sha256.hpp"
#include "cache_test_support.hpp"
#include "compiler/errors.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using namespace kda::cache;
using Catch::Matchers::Contains;

namespace {

BundleIdentity identity() {
  return {"kdagen-0.1.0+templates-0123456789abcdef", "abi-1", "v1", "nvrtc-13.0.48",
          "libnvrtc.so.13.0.48, 104857600 bytes"};
}

std::vector<BundleInput> inputs() {
  std::vector<BundleInput> out;
  for (const char* shape : {"d128.bf16.bshd", "d128.fp32.bshd"}) {
    BundleInput in;
    in.key_fields = test::sample_fields();
    in.key_fields.shape_key = shape;
    in.entry_points = {{"kda_prefill_test", {{"registers", 128}}}};
    in.launch = {{"schedule", "test"}};
    const std::string text = std::string("\x7f" "ELF cubin of ") + shape;
    in.cubin.assign(text.begin(), text.end());
    out.push_back(std::move(in));
  }
  return out;
}

} // namespace

TEST_CASE("bundle: entries round-trip, bytes are deterministic and pinned", "[cache][bundle]") {
  const Bytes bytes = encode_bundle(identity(), inputs());
  CHECK(bytes == encode_bundle(identity(), inputs()));
  CHECK(std::string(bytes.begin(), bytes.begin() + 8) == "KDAJITB1");
  // Golden: change this only with k_bundle_format_version (cache/bundle.hpp).
  CHECK(sha256_hex(std::span<const std::uint8_t>(bytes)) ==
        "be82bb2929ff7734aed4e130e8d7106ce3ca0d9636ebabb5fbcdb523d0bf0fd0");
  const Bundle b = Bundle::decode(bytes, "memory");
  CHECK(b.identity().generator_id == identity().generator_id);
  REQUIRE(b.entries().size() == 2);
  for (const BundleInput& in : inputs()) {
    const BundleEntry* e = b.find(make_cache_key(in.key_fields).hex());
    REQUIRE(e != nullptr);
    CHECK(e->manifest.key_fields == in.key_fields);
    CHECK(e->manifest.producer == Producer::aot);
    CHECK(e->manifest.entry_points == in.entry_points);
    CHECK(e->offset % 16 == 0);
    CHECK(b.cubin(*e) == in.cubin);
  }
  CHECK(b.find(std::string(64, '0')) == nullptr);
}

TEST_CASE("bundle: corrupt and truncated bundles are refused with the reason", "[cache][bundle]") {
  const Bytes good = encode_bundle(identity(), inputs());
  Bytes magic = good;
  magic[0] = 'X';
  CHECK_THROWS_WITH(Bundle::decode(magic, "a.kdab"), Contains("a.kdab: not a kdajit bundle"));
  Bytes cut(good.begin(), good.end() - 5);
  CHECK_THROWS_WITH(Bundle::decode(cut, "b.kdab"), Contains("b.kdab: truncated: entry 1"));
  Bytes header_only(good.begin(), good.begin() + 40);
  CHECK_THROWS_WITH(Bundle::decode(header_only, "c.kdab"), Contains("truncated: the index needs"));
  Bytes flipped = good;
  flipped.at(flipped.size() - 3) ^= 1; // inside the last cubin
  const Bundle b = Bundle::decode(flipped, "d.kdab");
  CHECK_THROWS_WITH(b.cubin(b.entries().back()), Contains("does not match its SHA-256"));
  CHECK_NOTHROW(b.cubin(b.entries().front()));
  Bytes version = good;
  const std::string from = "\"format_version\":2";
  const auto at = std::search(version.begin(), version.end(), from.begin(), from.end());
  REQUIRE(at != version.end());
  *(at + static_cast<long>(from.size()) - 1) = '7';
  CHECK_THROWS_WITH(Bundle::decode(version, "e.kdab"), Contains("format version 7 (this build reads version 2)"));
  Bytes text_version = good;
  const auto at2 = std::search(text_version.begin(), text_version.end(), from.begin(), from.end());
  *(at2 + static_cast<long>(from.size()) - 1) = '"'; // "format_version":" : no longer JSON
  CHECK_THROWS_WITH(Bundle::decode(text_version, "f.kdab"), Contains("the index is not valid JSON"));
  CHECK_THROWS_AS(Bundle::read("/nonexistent/x.kdab"), CacheError);
}
