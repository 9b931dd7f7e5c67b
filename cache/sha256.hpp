/// \file
/// SHA-256 (FIPS 180-4), written here so that the cache needs no third-party
/// hashing code. Incremental (`Sha256`) and one-shot (`sha256_hex`) forms; hex
/// output is lowercase.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kda::cache {

using Sha256Digest = std::array<std::uint8_t, 32>;

class Sha256 {
public:
  Sha256();

  void update(std::span<const std::uint8_t> bytes);
  void update(std::string_view bytes);

  /// The digest of everything passed to `update`. The object must not be
  /// updated or finished again afterwards (KDA_INTERNAL_ASSERT).
  Sha256Digest finish();
  std::string finish_hex();

private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> m_state;
  std::array<std::uint8_t, 64> m_buffer{};
  std::size_t m_buffered = 0;
  std::uint64_t m_total_bytes = 0;
  bool m_finished = false;
};

std::string sha256_hex(std::string_view bytes);
std::string sha256_hex(std::span<const std::uint8_t> bytes);

/// Lowercase hex of any byte sequence.
std::string to_hex(std::span<const std::uint8_t> bytes);

/// True when `text` is exactly 64 lowercase hex characters.
bool is_sha256_hex(std::string_view text);

} // namespace kda::cache
