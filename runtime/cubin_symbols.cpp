#include "runtime/cubin_symbols.hpp"

#include <cstring>

namespace kda::runtime {
namespace {

// ELF64 layout (System V ABI): header fields and section/symbol entries read
// at fixed offsets, little-endian as cubins are.
template <typename T>
bool read_at(const std::vector<std::uint8_t>& b, std::uint64_t offset, T& out) {
  if (offset > b.size() || b.size() - offset < sizeof(T)) {
    return false;
  }
  std::memcpy(&out, b.data() + offset, sizeof(T));
  return true;
}

constexpr std::uint32_t k_sht_symtab = 2;
constexpr std::uint8_t k_stt_func = 2;

} // namespace

std::set<std::string> cubin_function_names(const std::vector<std::uint8_t>& b) {
  std::set<std::string> names;
  if (b.size() < 64 || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0 || b[4] != 2) {
    return names;
  }
  std::uint64_t shoff = 0;
  std::uint16_t shentsize = 0, shnum = 0;
  if (!read_at(b, 0x28, shoff) || !read_at(b, 0x3a, shentsize) || !read_at(b, 0x3c, shnum) || shentsize < 64) {
    return names;
  }
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const std::uint64_t sh = shoff + static_cast<std::uint64_t>(i) * shentsize;
    std::uint32_t type = 0, link = 0;
    std::uint64_t offset = 0, size = 0, entsize = 0;
    if (!read_at(b, sh + 4, type) || type != k_sht_symtab || !read_at(b, sh + 0x18, offset) ||
        !read_at(b, sh + 0x20, size) || !read_at(b, sh + 0x28, link) || !read_at(b, sh + 0x38, entsize) ||
        entsize < 24) {
      continue;
    }
    std::uint64_t str_offset = 0, str_size = 0;
    const std::uint64_t strsh = shoff + static_cast<std::uint64_t>(link) * shentsize;
    if (!read_at(b, strsh + 0x18, str_offset) || !read_at(b, strsh + 0x20, str_size)) {
      continue;
    }
    for (std::uint64_t s = 0; s + entsize <= size; s += entsize) {
      std::uint32_t name = 0;
      std::uint8_t info = 0;
      if (!read_at(b, offset + s, name) || !read_at(b, offset + s + 4, info) || (info & 0xf) != k_stt_func ||
          name >= str_size || str_offset + name >= b.size()) {
        continue;
      }
      const char* start = reinterpret_cast<const char*>(b.data() + str_offset + name);
      const std::size_t max = b.size() - (str_offset + name);
      names.insert(std::string(start, strnlen(start, max)));
    }
  }
  return names;
}

} // namespace kda::runtime
