#include "cache/sha256.hpp"

#include "compiler/errors.hpp"

#include <algorithm>
#include <cstring>

namespace kda::cache {
namespace {

// FIPS 180-4, 4.2.2: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes.
constexpr std::array<std::uint32_t, 64> k_round_constants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// FIPS 180-4, 5.3.3: the initial hash value.
constexpr std::array<std::uint32_t, 8> k_initial_state = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr std::uint32_t rotr(std::uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

constexpr std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

} // namespace

Sha256::Sha256() : m_state(k_initial_state) {}

void Sha256::compress(const std::uint8_t* block) {
  std::array<std::uint32_t, 64> w{};
  for (int t = 0; t < 16; ++t) {
    w[t] = load_be32(block + 4 * t);
  }
  for (int t = 16; t < 64; ++t) {
    const std::uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const std::uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  std::uint32_t a = m_state[0], b = m_state[1], c = m_state[2], d = m_state[3];
  std::uint32_t e = m_state[4], f = m_state[5], g = m_state[6], h = m_state[7];
  for (int t = 0; t < 64; ++t) {
    const std::uint32_t sigma1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    const std::uint32_t choose = (e & f) ^ (~e & g);
    const std::uint32_t t1 = h + sigma1 + choose + k_round_constants[t] + w[t];
    const std::uint32_t sigma0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    const std::uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    const std::uint32_t t2 = sigma0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  m_state[0] += a;
  m_state[1] += b;
  m_state[2] += c;
  m_state[3] += d;
  m_state[4] += e;
  m_state[5] += f;
  m_state[6] += g;
  m_state[7] += h;
}

void Sha256::update(std::span<const std::uint8_t> bytes) {
  KDA_INTERNAL_ASSERT(!m_finished, "sha256 updated after finish");
  m_total_bytes += bytes.size();
  std::size_t pos = 0;
  if (m_buffered > 0) {
    const std::size_t take = std::min(bytes.size(), m_buffer.size() - m_buffered);
    std::memcpy(m_buffer.data() + m_buffered, bytes.data(), take);
    m_buffered += take;
    pos = take;
    if (m_buffered < m_buffer.size()) {
      return;
    }
    compress(m_buffer.data());
    m_buffered = 0;
  }
  for (; pos + 64 <= bytes.size(); pos += 64) {
    compress(bytes.data() + pos);
  }
  if (pos < bytes.size()) {
    m_buffered = bytes.size() - pos;
    std::memcpy(m_buffer.data(), bytes.data() + pos, m_buffered);
  }
}

void Sha256::update(std::string_view bytes) {
  update(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

Sha256Digest Sha256::finish() {
  KDA_INTERNAL_ASSERT(!m_finished, "sha256 finished twice");
  // FIPS 180-4, 5.1.1: a one bit, zeros to 56 mod 64, the bit length (64-bit big-endian).
  const std::uint64_t bit_length = m_total_bytes * 8;
  std::array<std::uint8_t, 72> padding{};
  padding[0] = 0x80;
  const std::size_t zeros = (m_buffered < 56 ? 56 - m_buffered : 120 - m_buffered);
  for (int i = 0; i < 8; ++i) {
    padding[zeros + i] = static_cast<std::uint8_t>(bit_length >> (56 - 8 * i));
  }
  update(std::span<const std::uint8_t>(padding.data(), zeros + 8));
  KDA_INTERNAL_ASSERT(m_buffered == 0, "sha256 padding did not end on a block boundary");
  m_finished = true;
  Sha256Digest digest{};
  for (int i = 0; i < 8; ++i) {
    digest[4 * i] = static_cast<std::uint8_t>(m_state[i] >> 24);
    digest[4 * i + 1] = static_cast<std::uint8_t>(m_state[i] >> 16);
    digest[4 * i + 2] = static_cast<std::uint8_t>(m_state[i] >> 8);
    digest[4 * i + 3] = static_cast<std::uint8_t>(m_state[i]);
  }
  return digest;
}

std::string Sha256::finish_hex() {
  const Sha256Digest digest = finish();
  return to_hex(digest);
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.finish_hex();
}

std::string sha256_hex(std::span<const std::uint8_t> bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.finish_hex();
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const std::uint8_t b : bytes) {
    out += k_digits[b >> 4];
    out += k_digits[b & 0xf];
  }
  return out;
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) {
    return false;
  }
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

} // namespace kda::cache
