#include "compiler/ptx/ptx_retarget.hpp"

#include "compiler/errors.hpp"
#include "compiler/text.hpp"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace kda {
namespace {

// A directive line: its start, its end (before the newline) and its words after the directive.
struct DirectiveLine {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string_view rest; // after ".version " / ".target "
};

// The first line whose first word is `directive`, looking no further than the first `.entry` or `.func`.
std::optional<DirectiveLine> find_directive(std::string_view ptx, std::string_view directive) {
  std::size_t begin = 0;
  while (begin < ptx.size()) {
    std::size_t end = ptx.find('\n', begin);
    if (end == std::string_view::npos) {
      end = ptx.size();
    }
    const std::string_view line = trim_blanks(ptx.substr(begin, end - begin));
    if (line.starts_with(".entry") || line.find(" .entry ") != std::string_view::npos || line.starts_with(".func") ||
        line.find(" .func ") != std::string_view::npos) {
      return std::nullopt;
    }
    if (line.starts_with(directive) && line.size() > directive.size() &&
        (line[directive.size()] == ' ' || line[directive.size()] == '\t')) {
      return DirectiveLine{begin, end, trim_blanks(line.substr(directive.size()))};
    }
    begin = end + 1;
  }
  return std::nullopt;
}

std::optional<PtxVersion> parse_version(std::string_view text) {
  PtxVersion v;
  const char* p = text.data();
  const char* last = text.data() + text.size();
  auto [dot, e1] = std::from_chars(p, last, v.major);
  if (e1 != std::errc() || dot == last || *dot != '.') {
    return std::nullopt;
  }
  auto [end, e2] = std::from_chars(dot + 1, last, v.minor);
  if (e2 != std::errc() || end != last) {
    return std::nullopt;
  }
  return v;
}

std::string first_line(std::string_view ptx) {
  return std::string(ptx.substr(0, std::min(ptx.find('\n'), std::size_t{80})));
}

} // namespace

PtxHeader read_ptx_header(std::string_view ptx) {
  const std::optional<DirectiveLine> version = find_directive(ptx, ".version");
  const std::optional<DirectiveLine> target = find_directive(ptx, ".target");
  const std::optional<PtxVersion> parsed = version ? parse_version(version->rest) : std::nullopt;
  if (!parsed || !target || target->rest.empty()) {
    throw InternalError(fmt::format("PTX without a '.version X.Y' and a '.target' line before its first function "
                                    "(it begins '{}')",
                                    first_line(ptx)));
  }
  const std::string_view words = target->rest;
  return {*parsed, std::string(words.substr(0, words.find_first_of(", \t")))};
}

std::string retarget_ptx(std::string_view ptx, const Target& target) {
  const PtxHeader header = read_ptx_header(ptx);
  const PtxVersion version = std::max(header.version, target.lowest_ptx_version);
  const DirectiveLine v = *find_directive(ptx, ".version");
  const DirectiveLine t = *find_directive(ptx, ".target");
  const std::string_view further = t.rest.substr(header.target.size()); // ", debug" and the like
  const std::string version_line = fmt::format(".version {}.{}", version.major, version.minor);
  const std::string target_line = fmt::format(".target {}{}", target.arch(), further);
  // the two lines in the order they appear (ptxas wants .version first)
  std::string out;
  out.reserve(ptx.size() + 16);
  const bool version_first = v.begin < t.begin;
  const DirectiveLine& a = version_first ? v : t;
  const DirectiveLine& b = version_first ? t : v;
  out.append(ptx.substr(0, a.begin));
  out.append(version_first ? version_line : target_line);
  out.append(ptx.substr(a.end, b.begin - a.end));
  out.append(version_first ? target_line : version_line);
  out.append(ptx.substr(b.end));
  return out;
}

} // namespace kda
