// Descriptor encodings against the bit layouts of the PTX ISA (see
// compiler/encodings/smem_descriptor.hpp for the sections).
#include "compiler/encodings/smem_descriptor.hpp"
#include "compiler/errors.hpp"

#include <catch2/catch.hpp>

using namespace kda;

TEST_CASE("wgmma descriptor fields land on their PTX ISA bits", "[compiler][encoding]") {
  SmemDescriptorFields f;
  f.start_address = 0x400;
  f.leading_byte_offset = 16;
  f.stride_byte_offset = 1024;
  f.swizzle = SmemSwizzle::b128;
  const std::uint64_t d = encode_wgmma_descriptor(f);
  CHECK((d & 0x3fff) == 0x40);                  // 0x400 >> 4
  CHECK(((d >> 16) & 0x3fff) == 1);             // 16 >> 4
  CHECK(((d >> 32) & 0x3fff) == 64);            // 1024 >> 4
  CHECK(((d >> 49) & 0x7) == 0);
  CHECK((d >> 62) == 1);                        // 128-byte swizzle
  CHECK(d == 0x4000004000010040ull);
  CHECK(decode_wgmma_descriptor(d) == f);
  for (SmemSwizzle s : {SmemSwizzle::none, SmemSwizzle::b32, SmemSwizzle::b64, SmemSwizzle::b128}) {
    f.swizzle = s;
    f.base_offset = 5;
    f.start_address = 0x3fff0; // the largest address that fits
    CHECK(decode_wgmma_descriptor(encode_wgmma_descriptor(f)) == f);
  }
}

TEST_CASE("tcgen05 shared-memory descriptor fields land on their PTX ISA bits", "[compiler][encoding]") {
  SmemDescriptorFields f;
  f.start_address = 0x2000;
  f.leading_byte_offset = 128;
  f.stride_byte_offset = 1024;
  f.swizzle = SmemSwizzle::b128;
  const std::uint64_t d = encode_tcgen05_smem_descriptor(f);
  CHECK(((d >> 46) & 0x7) == 1); // fixed 0b001
  CHECK(((d >> 52) & 1) == 0);
  CHECK((d >> 61) == 2);         // 128-byte swizzle is 2 here (1 on wgmma)
  CHECK(d == (0x200ull | (8ull << 16) | (64ull << 32) | (1ull << 46) | (2ull << 61)));
  CHECK(decode_tcgen05_smem_descriptor(d) == f);
  const std::pair<SmemSwizzle, std::uint64_t> modes[] = {{SmemSwizzle::none, 0},
                                                         {SmemSwizzle::b128_atom32, 1},
                                                         {SmemSwizzle::b128, 2},
                                                         {SmemSwizzle::b64, 4},
                                                         {SmemSwizzle::b32, 6}};
  for (const auto& [mode, bits] : modes) {
    f.swizzle = mode;
    f.leading_is_absolute = mode == SmemSwizzle::none;
    const std::uint64_t e = encode_tcgen05_smem_descriptor(f);
    CHECK((e >> 61) == bits);
    CHECK(decode_tcgen05_smem_descriptor(e) == f);
  }
}

TEST_CASE("descriptor encoders reject what the hardware cannot address", "[compiler][encoding]") {
  SmemDescriptorFields f;
  f.start_address = 0x408; // not 16-byte aligned
  CHECK_THROWS_AS(encode_wgmma_descriptor(f), InternalError);
  f.start_address = 1u << 18; // past 14 bits
  CHECK_THROWS_AS(encode_tcgen05_smem_descriptor(f), InternalError);
  f.start_address = 0;
  f.stride_byte_offset = 300000;
  CHECK_THROWS_WITH(encode_wgmma_descriptor(f), Catch::Contains("stride byte offset 300000"));
  f.stride_byte_offset = 1024;
  f.base_offset = 8;
  CHECK_THROWS_WITH(encode_tcgen05_smem_descriptor(f), Catch::Contains("base offset 8 is over 7"));
  f.base_offset = 0;
  f.swizzle = SmemSwizzle::b128_atom32;
  CHECK_THROWS_WITH(encode_wgmma_descriptor(f), Catch::Contains("only for tcgen05"));
  f.swizzle = SmemSwizzle::none;
  f.leading_is_absolute = true;
  CHECK_THROWS_AS(encode_wgmma_descriptor(f), InternalError);
}

TEST_CASE("swizzled operands off a repeat boundary need the matching base offset", "[compiler][encoding]") {
  CHECK(swizzle_repeat_bytes(SmemSwizzle::b128) == 1024);
  CHECK(swizzle_repeat_bytes(SmemSwizzle::b64) == 512);
  CHECK(swizzle_repeat_bytes(SmemSwizzle::b32) == 256);
  CHECK(swizzle_base_offset(0x400, SmemSwizzle::b128) == 0);
  CHECK(swizzle_base_offset(0x480, SmemSwizzle::b128) == 1);
  CHECK(swizzle_base_offset(0x780, SmemSwizzle::b128) == 7);
  CHECK(swizzle_base_offset(0x480, SmemSwizzle::none) == 0);
}
