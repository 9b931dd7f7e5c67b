#include "runtime/cubin_symbols.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

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

// .nv.info attributes: 4-byte records (format, attribute, 2 bytes), a
// format-4 record followed by its payload of the size in those 2 bytes.
constexpr std::uint8_t k_eifmt_sval = 4;
constexpr std::uint8_t k_eiattr_frame_size = 0x11;
constexpr std::uint8_t k_eiattr_min_stack_size = 0x12;
constexpr std::uint8_t k_eiattr_regcount = 0x2f;

struct Section {
  std::uint32_t name_index = 0;
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint64_t entsize = 0;
};

std::string string_at(const std::vector<std::uint8_t>& b, std::uint64_t table, std::uint64_t table_size,
                      std::uint32_t index) {
  if (index >= table_size || table + index >= b.size()) {
    return {};
  }
  const char* start = reinterpret_cast<const char*>(b.data() + table + index);
  return std::string(start, strnlen(start, b.size() - (table + index)));
}

// Every section with its name; empty for a file that is not ELF64.
std::vector<Section> sections_of(const std::vector<std::uint8_t>& b) {
  std::vector<Section> out;
  if (b.size() < 64 || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0 || b[4] != 2) {
    return out;
  }
  std::uint64_t shoff = 0;
  std::uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read_at(b, 0x28, shoff) || !read_at(b, 0x3a, shentsize) || !read_at(b, 0x3c, shnum) ||
      !read_at(b, 0x3e, shstrndx) || shentsize < 64) {
    return out;
  }
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const std::uint64_t sh = shoff + static_cast<std::uint64_t>(i) * shentsize;
    Section s;
    if (!read_at(b, sh, s.name_index) || !read_at(b, sh + 4, s.type) || !read_at(b, sh + 0x18, s.offset) ||
        !read_at(b, sh + 0x20, s.size) || !read_at(b, sh + 0x28, s.link) || !read_at(b, sh + 0x38, s.entsize)) {
      return {};
    }
    out.push_back(s);
  }
  if (shstrndx < out.size()) {
    const Section& names = out[shstrndx];
    for (Section& s : out) {
      s.name = string_at(b, names.offset, names.size, s.name_index);
    }
  }
  return out;
}

// Symbol index -> name, from the first symbol table.
std::vector<std::string> symbol_names(const std::vector<std::uint8_t>& b, const std::vector<Section>& sections) {
  std::vector<std::string> out;
  for (const Section& s : sections) {
    if (s.type != k_sht_symtab || s.entsize < 24 || s.link >= sections.size()) {
      continue;
    }
    const Section& strings = sections[s.link];
    for (std::uint64_t e = 0; e + s.entsize <= s.size; e += s.entsize) {
      std::uint32_t name = 0;
      out.push_back(read_at(b, s.offset + e, name) ? string_at(b, strings.offset, strings.size, name) : "");
    }
    break;
  }
  return out;
}

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

std::map<std::string, CubinResources> cubin_resources(const std::vector<std::uint8_t>& b, SmemReserve reserve_rule) {
  std::map<std::string, CubinResources> out;
  const std::vector<Section> sections = sections_of(b);
  const std::vector<std::string> symbols = symbol_names(b, sections);
  std::map<std::string, CubinResources> seen;
  for (const Section& s : sections) {
    if (s.name != ".nv.info" || s.offset > b.size() || b.size() - s.offset < s.size) {
      continue;
    }
    for (std::uint64_t p = s.offset; p + 4 <= s.offset + s.size;) {
      const std::uint8_t format = b[p];
      const std::uint8_t attribute = b[p + 1];
      std::uint16_t payload = 0;
      read_at(b, p + 2, payload);
      if (format != k_eifmt_sval) {
        p += 4;
        continue;
      }
      std::uint32_t symbol = 0, value = 0;
      if (payload == 8 && read_at(b, p + 4, symbol) && read_at(b, p + 8, value) && symbol < symbols.size()) {
        CubinResources& r = seen[symbols[symbol]];
        if (attribute == k_eiattr_regcount) {
          r.registers = static_cast<int>(value);
          out[symbols[symbol]]; // a kernel with a register count is reported
        } else if (attribute == k_eiattr_frame_size) {
          r.stack_frame_bytes = static_cast<int>(value);
        } else if (attribute == k_eiattr_min_stack_size) {
          r.min_stack_bytes = static_cast<int>(value);
        }
      }
      p += 4 + payload;
    }
  }
  // static SMEM: the kernel's .nv.shared section, less the system reserve
  // where the cubin counts it in
  const bool counts_reserve =
      reserve_rule == SmemReserve::counted || std::any_of(sections.begin(), sections.end(), [](const Section& s) {
        return s.name.starts_with(".nv.shared.reserved.");
      });
  std::map<std::string, std::uint64_t> shared_sizes;
  for (const Section& s : sections) {
    if (s.name.starts_with(".nv.shared.")) {
      shared_sizes[s.name.substr(std::string_view(".nv.shared.").size())] = s.size;
    }
  }
  for (auto& [name, r] : out) {
    r = seen[name];
    const auto shared = shared_sizes.find(name);
    const std::uint64_t size = shared != shared_sizes.end() ? shared->second : 0;
    const std::uint64_t reserve = counts_reserve && shared != shared_sizes.end() ? k_reserved_smem_per_block : 0;
    r.static_smem_bytes =
        size >= reserve && size - reserve <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
            ? static_cast<int>(size - reserve)
            : -1;
  }
  return out;
}

} // namespace kda::runtime
