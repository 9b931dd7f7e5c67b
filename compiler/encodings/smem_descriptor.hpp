/// \file
/// 64-bit shared-memory matrix descriptors of the asynchronous tensor-core
/// instructions, encoded on the host so that the generated code receives the
/// constant fields (offsets, swizzle) as plan constants and only adds the
/// operand's address on the device.
///
/// wgmma (sm_90a), PTX ISA 9.7.15.5.1.2 "Matrix Descriptor Format"
/// (asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor):
///   bits  0-13  start address >> 4
///   bits 16-29  leading dimension byte offset >> 4
///   bits 32-45  stride dimension byte offset >> 4
///   bits 49-51  matrix base offset
///   bits 62-63  swizzle: 0 none, 1 128B, 2 64B, 3 32B
/// tcgen05 (sm_100a / sm_100f / sm_103a), PTX ISA "Shared Memory Descriptor"
/// (tcgen05-shared-memory-desc-layout):
///   bits  0-13  start address >> 4
///   bits 16-29  leading dimension byte offset >> 4 (or absolute address, bit 52)
///   bits 32-45  stride dimension byte offset >> 4
///   bits 46-48  fixed 0b001
///   bits 49-51  matrix base offset
///   bit  52     leading dimension stride mode: 0 relative offset, 1 absolute address
///   bits 61-63  swizzle: 0 none, 1 128B with 32B atoms, 2 128B, 4 64B, 6 32B
/// Addresses and offsets are in bytes, multiples of 16, below 2^18 (14 bits
/// after dropping the 4 low bits).
#pragma once

#include <cstdint>

namespace kda {

enum class SmemSwizzle { none, b32, b64, b128, b128_atom32 };

struct SmemDescriptorFields {
  std::uint32_t start_address = 0;       ///< bytes in the shared window
  std::uint32_t leading_byte_offset = 0; ///< bytes between core matrices along K (or its address, tcgen05 absolute mode)
  std::uint32_t stride_byte_offset = 0;  ///< bytes between core matrices along M / N
  std::uint32_t base_offset = 0;         ///< 0..7: where a swizzled pattern starts inside its repeat
  SmemSwizzle swizzle = SmemSwizzle::none;
  bool leading_is_absolute = false;      ///< tcgen05 only (bit 52)

  bool operator==(const SmemDescriptorFields&) const = default;
};

/// Bytes after which the swizzle pattern repeats (the alignment its operand
/// tiles need for base offset 0): 256, 512, 1024 for 32/64/128-byte swizzles; 16 unswizzled.
std::uint32_t swizzle_repeat_bytes(SmemSwizzle swizzle);

/// The base offset a swizzled operand starting at `start_address` needs:
/// (start_address >> 7) & 7 inside a 128-byte-swizzle repeat (PTX ISA, matrix
/// base offset), 0 when it starts on a repeat boundary or is not swizzled.
std::uint32_t swizzle_base_offset(std::uint32_t start_address, SmemSwizzle swizzle);

/// Encodes a wgmma descriptor. Throws InternalError naming the field for a
/// value that does not fit: misaligned or out-of-range address/offsets,
/// base offset over 7, an absolute leading offset, or the 32-byte-atom swizzle
/// (tcgen05 only).
std::uint64_t encode_wgmma_descriptor(const SmemDescriptorFields& fields);
SmemDescriptorFields decode_wgmma_descriptor(std::uint64_t descriptor);

/// Encodes a tcgen05 shared-memory descriptor (same checks; every swizzle allowed).
std::uint64_t encode_tcgen05_smem_descriptor(const SmemDescriptorFields& fields);
SmemDescriptorFields decode_tcgen05_smem_descriptor(std::uint64_t descriptor);

} // namespace kda
