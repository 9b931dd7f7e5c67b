#include "compiler/encodings/smem_descriptor.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {
namespace {

constexpr std::uint32_t k_field_limit = 1u << 18; // 14 bits after >> 4

std::uint64_t field14(std::uint32_t bytes, const char* name) {
  if (bytes % 16 != 0 || bytes >= k_field_limit) {
    throw InternalError(fmt::format("shared-memory descriptor: {} {} is not a multiple of 16 below {}", name, bytes,
                                    k_field_limit));
  }
  return static_cast<std::uint64_t>(bytes >> 4) & 0x3fffu;
}

std::uint32_t unfield14(std::uint64_t descriptor, int shift) {
  return static_cast<std::uint32_t>((descriptor >> shift) & 0x3fffu) << 4;
}

void check_base_offset(const SmemDescriptorFields& f) {
  if (f.base_offset > 7) {
    throw InternalError(fmt::format("shared-memory descriptor: base offset {} is over 7", f.base_offset));
  }
}

std::uint64_t wgmma_swizzle_bits(SmemSwizzle s) {
  switch (s) {
  case SmemSwizzle::none:
    return 0;
  case SmemSwizzle::b128:
    return 1;
  case SmemSwizzle::b64:
    return 2;
  case SmemSwizzle::b32:
    return 3;
  case SmemSwizzle::b128_atom32:
    break;
  }
  throw InternalError("wgmma descriptor: the 128-byte swizzle with 32-byte atoms exists only for tcgen05");
}

std::uint64_t tcgen05_swizzle_bits(SmemSwizzle s) {
  switch (s) {
  case SmemSwizzle::none:
    return 0;
  case SmemSwizzle::b128_atom32:
    return 1;
  case SmemSwizzle::b128:
    return 2;
  case SmemSwizzle::b64:
    return 4;
  case SmemSwizzle::b32:
    return 6;
  }
  return 0;
}

} // namespace

std::uint32_t swizzle_repeat_bytes(SmemSwizzle swizzle) {
  switch (swizzle) {
  case SmemSwizzle::none:
    return 16;
  case SmemSwizzle::b32:
    return 256;
  case SmemSwizzle::b64:
    return 512;
  case SmemSwizzle::b128:
  case SmemSwizzle::b128_atom32:
    return 1024;
  }
  return 16;
}

std::uint32_t swizzle_base_offset(std::uint32_t start_address, SmemSwizzle swizzle) {
  if (swizzle == SmemSwizzle::none || start_address % swizzle_repeat_bytes(swizzle) == 0) {
    return 0;
  }
  return (start_address >> 7) & 0x7u;
}

std::uint64_t encode_wgmma_descriptor(const SmemDescriptorFields& f) {
  check_base_offset(f);
  if (f.leading_is_absolute) {
    throw InternalError("wgmma descriptor: the leading dimension is always a relative byte offset");
  }
  return field14(f.start_address, "start address") | field14(f.leading_byte_offset, "leading byte offset") << 16 |
         field14(f.stride_byte_offset, "stride byte offset") << 32 | static_cast<std::uint64_t>(f.base_offset) << 49 |
         wgmma_swizzle_bits(f.swizzle) << 62;
}

SmemDescriptorFields decode_wgmma_descriptor(std::uint64_t d) {
  SmemDescriptorFields f;
  f.start_address = unfield14(d, 0);
  f.leading_byte_offset = unfield14(d, 16);
  f.stride_byte_offset = unfield14(d, 32);
  f.base_offset = static_cast<std::uint32_t>((d >> 49) & 0x7u);
  constexpr SmemSwizzle k_modes[] = {SmemSwizzle::none, SmemSwizzle::b128, SmemSwizzle::b64, SmemSwizzle::b32};
  f.swizzle = k_modes[(d >> 62) & 0x3u];
  return f;
}

std::uint64_t encode_tcgen05_smem_descriptor(const SmemDescriptorFields& f) {
  check_base_offset(f);
  return field14(f.start_address, "start address") | field14(f.leading_byte_offset, "leading byte offset") << 16 |
         field14(f.stride_byte_offset, "stride byte offset") << 32 | std::uint64_t{1} << 46 |
         static_cast<std::uint64_t>(f.base_offset) << 49 | static_cast<std::uint64_t>(f.leading_is_absolute) << 52 |
         tcgen05_swizzle_bits(f.swizzle) << 61;
}

SmemDescriptorFields decode_tcgen05_smem_descriptor(std::uint64_t d) {
  SmemDescriptorFields f;
  f.start_address = unfield14(d, 0);
  f.leading_byte_offset = unfield14(d, 16);
  f.stride_byte_offset = unfield14(d, 32);
  f.base_offset = static_cast<std::uint32_t>((d >> 49) & 0x7u);
  f.leading_is_absolute = ((d >> 52) & 1u) != 0;
  switch ((d >> 61) & 0x7u) {
  case 1:
    f.swizzle = SmemSwizzle::b128_atom32;
    break;
  case 2:
    f.swizzle = SmemSwizzle::b128;
    break;
  case 4:
    f.swizzle = SmemSwizzle::b64;
    break;
  case 6:
    f.swizzle = SmemSwizzle::b32;
    break;
  default:
    f.swizzle = SmemSwizzle::none;
  }
  return f;
}

} // namespace kda
