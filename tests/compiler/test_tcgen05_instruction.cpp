// tcgen05 .kind::f16 instruction descriptors and TMEM addresses against the
// PTX ISA bit layout (compiler/encodings/tcgen05_instruction.hpp). These are
// the encodings the Blackwell family will use; they are compile-verified and
// unit-tested here, never run (no Blackwell GPU in this workplace).
#include "compiler/encodings/tcgen05_instruction.hpp"
#include "compiler/errors.hpp"
#include "compiler/validated_schedule.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using Catch::Contains;

TEST_CASE("the fused [S|O] GEMM descriptor of the M128 design", "[compiler][encoding][tcgen05]") {
  // bf16 x bf16 -> f32, M = 128, N = 160 (Kr | Mqk^T), B stored N-major.
  Tcgen05F16Instruction fused;
  fused.m = 128;
  fused.n = 160;
  fused.b_major = MmaMajor::mn;
  const std::uint32_t d = encode_tcgen05_f16_instruction(fused);
  CHECK(((d >> 4) & 0x3) == 1);   // D f32
  CHECK(((d >> 7) & 0x7) == 1);   // A bf16
  CHECK(((d >> 10) & 0x7) == 1);  // B bf16
  CHECK(((d >> 15) & 1) == 0);    // A K-major
  CHECK(((d >> 16) & 1) == 1);    // B MN-major
  CHECK(((d >> 17) & 0x3f) == 20); // 160 >> 3
  CHECK(((d >> 24) & 0x1f) == 8);  // 128 >> 4
  CHECK((d & 0xf) == 0);           // dense, no saturate
  CHECK(d == 0x08290490u);
  CHECK(decode_tcgen05_f16_instruction(d) == fused);

  Tcgen05F16Instruction n16 = fused; // the N16 variant: N = 144, K-major B
  n16.n = 144;
  n16.b_major = MmaMajor::k;
  CHECK(encode_tcgen05_f16_instruction(n16) == 0x08240490u);
  CHECK(decode_tcgen05_f16_instruction(encode_tcgen05_f16_instruction(n16)) == n16);
}

TEST_CASE("every valid kind::f16 shape round-trips and invalid ones are refused", "[compiler][encoding][tcgen05]") {
  for (int m : {64, 128, 256}) {
    const int step = m == 64 ? 8 : 16;
    for (int n = step; n <= 256; n += step) {
      Tcgen05F16Instruction ins;
      ins.m = m;
      ins.n = n;
      ins.a = ins.b = MmaElement::f16;
      ins.d = MmaElement::f16;
      ins.negate_a = n % 32 == 0;
      ins.a_major = MmaMajor::mn;
      INFO("M " << m << " N " << n);
      CHECK(decode_tcgen05_f16_instruction(encode_tcgen05_f16_instruction(ins)) == ins);
    }
  }
  Tcgen05F16Instruction bad;
  bad.m = 96;
  CHECK_THROWS_WITH(encode_tcgen05_f16_instruction(bad), Contains("M = 96 is not 64, 128 or 256"));
  bad.m = 128;
  bad.n = 136; // a multiple of 8 but not of 16
  CHECK_THROWS_WITH(encode_tcgen05_f16_instruction(bad), Contains("N = 136 for M = 128 must be a multiple of 16"));
  bad.n = 272;
  CHECK_THROWS_AS(encode_tcgen05_f16_instruction(bad), InternalError);
  bad.n = 128;
  bad.a = MmaElement::f16; // A f16 with B bf16
  CHECK_THROWS_WITH(encode_tcgen05_f16_instruction(bad), Contains("same type"));
  bad.a = MmaElement::f32;
  bad.b = MmaElement::f32;
  CHECK_THROWS_WITH(encode_tcgen05_f16_instruction(bad), Contains("must be f16 or bf16"));
}

TEST_CASE("TMEM addresses and allocations", "[compiler][encoding][tcgen05]") {
  CHECK(tmem_address(0, 0) == 0u);
  CHECK(tmem_address(32, 128) == ((32u << 16) | 128u));
  CHECK(tmem_address(127, 511) == 0x007f01ffu);
  CHECK_THROWS_AS(tmem_address(128, 0), InternalError);
  CHECK_THROWS_AS(tmem_address(0, 512), InternalError);
  // The M128 plan's 256 columns: state 128 + fused O 32 + P 32 + bf16 state
  // snapshot 64 (two bf16 per 32-bit column) = 256; the N16 plan's 240 = 128 +
  // 16 + 16 + 16 + 64 allocates 256 (tcgen05.alloc takes powers of two >= 32).
  CHECK(128 + 32 + 32 + 64 == 256);
  CHECK(tmem_allocation_columns(128 + 16 + 16 + 16 + 64) == 256);
}
