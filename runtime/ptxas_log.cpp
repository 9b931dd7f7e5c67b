#include "runtime/ptxas_log.hpp"
#include "compiler/text.hpp"

#include <charconv>
#include <set>
#include <vector>

namespace kda::runtime {
namespace {

/// Splits "a, b, c" on commas, trimming each item.
std::vector<std::string_view> split_items(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    out.push_back(trim_blanks(s.substr(0, comma)));
    if (comma == std::string_view::npos) {
      break;
    }
    s.remove_prefix(comma + 1);
  }
  return out;
}

/// "5104 bytes stack frame" → (5104, "bytes stack frame"); nothing when the
/// item does not start with a number.
bool split_count(std::string_view item, int& count, std::string_view& rest) {
  const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), count);
  if (error != std::errc() || end == item.data()) {
    return false;
  }
  rest = trim_blanks(item.substr(static_cast<std::size_t>(end - item.data())));
  return true;
}

/// The text between the first pair of single quotes after `marker`.
std::string_view quoted_after(std::string_view line, std::size_t marker_end) {
  const std::size_t open = line.find('\'', marker_end);
  if (open == std::string_view::npos) {
    return {};
  }
  const std::size_t close = line.find('\'', open + 1);
  return close == std::string_view::npos ? std::string_view{} : line.substr(open + 1, close - open - 1);
}

/// "5104 bytes stack frame, 5880 bytes spill stores, 7064 bytes spill loads"
void read_frame_line(std::string_view text, ResourceUsage& usage) {
  for (std::string_view item : split_items(text)) {
    int count = 0;
    std::string_view what;
    if (!split_count(item, count, what)) {
      continue;
    }
    if (what == "bytes stack frame") {
      usage.stack_frame_bytes = count;
    } else if (what == "bytes spill stores") {
      usage.spill_store_bytes = count;
    } else if (what == "bytes spill loads") {
      usage.spill_load_bytes = count;
    }
  }
}

/// "Used 12 registers, used 1 barriers, 16 bytes smem, 360 bytes cmem[0]"
void read_used_line(std::string_view text, ResourceUsage& usage) {
  for (std::string_view item : split_items(text)) {
    if (item.starts_with("Used ") || item.starts_with("used ")) {
      item.remove_prefix(5);
    }
    int count = 0;
    std::string_view what;
    if (!split_count(item, count, what)) {
      continue;
    }
    if (what == "registers" || what == "register") {
      usage.registers = count;
    } else if (what == "barriers" || what == "barrier") {
      usage.barriers = count;
    } else if (what == "bytes smem") {
      usage.static_smem_bytes = count;
    }
  }
}

/// The last quoted name of a line.
std::string_view last_quoted(std::string_view line) {
  const std::size_t close = line.rfind('\'');
  if (close == std::string_view::npos || close == 0) {
    return {};
  }
  const std::size_t open = line.rfind('\'', close - 1);
  return open == std::string_view::npos ? std::string_view{} : line.substr(open + 1, close - open - 1);
}

} // namespace

std::map<std::string, ResourceUsage> parse_ptxas_resource_log(std::string_view log) {
  constexpr std::string_view k_compiling = "Compiling entry function";
  constexpr std::string_view k_properties = "Function properties for ";
  constexpr std::string_view k_used = "Used ";

  std::set<std::string, std::less<>> entries;
  std::map<std::string, ResourceUsage, std::less<>> functions; // entries and device functions
  std::string compiling;  // entry named by the last "Compiling entry function"
  std::string properties; // function named by the last "Function properties for"

  while (!log.empty()) {
    const std::size_t newline = log.find('\n');
    const std::string_view raw = log.substr(0, newline);
    log.remove_prefix(newline == std::string_view::npos ? log.size() : newline + 1);
    if (!raw.starts_with("ptxas")) {
      // The frame line has been seen with a "ptxas   ." prefix (13.0) and bare
      // indentation (older releases); other lines are not ours.
      if (raw.find("bytes stack frame") != std::string_view::npos && !properties.empty()) {
        read_frame_line(trim_blanks(raw), functions[properties]);
      }
      continue;
    }
    // Past "ptxas info    :" / "ptxas         ." the payload starts.
    const std::size_t body_start = raw.find_first_of(":.", 5);
    const std::string_view body =
        body_start == std::string_view::npos ? std::string_view{} : trim_blanks(raw.substr(body_start + 1));
    if (body.find("wgmma.mma_async instructions are serialized") != std::string_view::npos) {
      functions[std::string(last_quoted(body))].wgmma_serialized = true;
    } else if (body.find("warpgroup.wait is injected") != std::string_view::npos) {
      functions[std::string(last_quoted(body))].wgmma_wait_injected = true;
    } else if (const std::size_t at = raw.find(k_compiling); at != std::string_view::npos) {
      compiling = std::string(quoted_after(raw, at + k_compiling.size()));
      if (!compiling.empty()) {
        entries.insert(compiling);
        functions[compiling];
      }
    } else if (body.starts_with(k_properties)) {
      properties = std::string(trim_blanks(body.substr(k_properties.size())));
    } else if (body.find("bytes stack frame") != std::string_view::npos) {
      if (!properties.empty()) {
        read_frame_line(body, functions[properties]);
      }
    } else if (body.starts_with(k_used) && !compiling.empty()) {
      read_used_line(body, functions[compiling]);
    }
  }

  std::map<std::string, ResourceUsage> out;
  for (const std::string& name : entries) {
    out.emplace(name, functions.find(name)->second);
  }
  return out;
}

} // namespace kda::runtime
