/// \file
/// Numbers on the command line: the whole word must be a number of the
/// expected kind inside the option's range, or the command stops with a
/// UsageError (exit 2) naming the option, the word and the range. Nothing
/// wraps, saturates or is read only in part ("12abc", "1e999", "nan").
#pragma once

#include "tools/args.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace kda::tools {

/// `text` as an integer in [min, max]; `what` names it in the error.
std::int64_t parse_integer(std::string_view text, std::string_view what, std::int64_t min, std::int64_t max);

/// `text` as a finite real number in [min, max].
double parse_real(std::string_view text, std::string_view what, double min, double max);

/// Option `name` as an integer in [min, max], `fallback` when it is absent.
std::int64_t integer_option(const ParsedArgs& parsed, const std::string& name, std::int64_t fallback,
                            std::int64_t min, std::int64_t max);

/// Option `name` as a finite real number in [min, max], `fallback` when absent.
double real_option(const ParsedArgs& parsed, const std::string& name, double fallback, double min, double max);

} // namespace kda::tools
