#include "cache/sha256.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace kda::cache;

TEST_CASE("sha256 matches the FIPS 180-4 / NIST test vectors", "[cache][sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                   "mnopqrstnopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(sha256_hex(std::string(1'000'000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256 pads correctly around block boundaries", "[cache][sha256]") {
  // Lengths where the padding needs one or two blocks (digests from Python's hashlib).
  const std::pair<std::size_t, const char*> vectors[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
  };
  for (const auto& [length, digest] : vectors) {
    INFO("length " << length);
    CHECK(sha256_hex(std::string(length, 'a')) == digest);
  }
}

TEST_CASE("incremental sha256 equals one-shot for every split", "[cache][sha256]") {
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text += static_cast<char>((i * 37 + 11) & 0xff);
  }
  for (std::size_t length : {0u, 1u, 63u, 64u, 65u, 127u, 128u, 200u}) {
    const std::string part = text.substr(0, length);
    const std::string expected = sha256_hex(part);
    for (std::size_t split = 0; split <= length; split += 7) {
      Sha256 hash;
      hash.update(std::string_view(part).substr(0, split));
      hash.update(std::string_view(part).substr(split));
      INFO("length " << length << " split " << split);
      CHECK(hash.finish_hex() == expected);
    }
    Sha256 bytewise;
    for (const char c : part) {
      bytewise.update(std::string_view(&c, 1));
    }
    CHECK(bytewise.finish_hex() == expected);
  }
  const std::vector<std::uint8_t> bytes = {'a', 'b', 'c'};
  CHECK(sha256_hex(std::span<const std::uint8_t>(bytes)) == sha256_hex("abc"));
}

TEST_CASE("hex helpers", "[cache][sha256]") {
  const std::uint8_t bytes[] = {0x00, 0x0f, 0xa5, 0xff};
  CHECK(to_hex(bytes) == "000fa5ff");
  CHECK(is_sha256_hex(sha256_hex("x")));
  CHECK_FALSE(is_sha256_hex("abc"));
  CHECK_FALSE(is_sha256_hex(std::string(64, 'A')));
  CHECK_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
}
