/// \file
/// Small text helpers shared by the parsers of tool output (ptxas logs, PTX headers).
#pragma once

#include <string_view>

namespace kda {

/// `s` without leading blanks and tabs, and without trailing blanks, tabs and '\r'.
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

} // namespace kda
