#include "tools/number_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace kda::tools {

std::int64_t parse_integer(std::string_view text, std::string_view what, std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error == std::errc::invalid_argument || stop != end) {
    throw UsageError(fmt::format("{} takes an integer, got '{}'", what, text));
  }
  if (error == std::errc::result_out_of_range || value < min || value > max) {
    throw UsageError(fmt::format("{} takes an integer from {} to {}, got '{}'", what, min, max, text));
  }
  return value;
}

double parse_real(std::string_view text, std::string_view what, double min, double max) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error == std::errc::invalid_argument || stop != end || std::isnan(value)) {
    throw UsageError(fmt::format("{} takes a number, got '{}'", what, text));
  }
  if (error == std::errc::result_out_of_range || !std::isfinite(value) || value < min || value > max) {
    throw UsageError(fmt::format("{} takes a number from {} to {}, got '{}'", what, min, max, text));
  }
  return value;
}

std::int64_t integer_option(const ParsedArgs& parsed, const std::string& name, std::int64_t fallback,
                            std::int64_t min, std::int64_t max) {
  const std::optional<std::string> text = parsed.option(name);
  return text ? parse_integer(*text, name, min, max) : fallback;
}

double real_option(const ParsedArgs& parsed, const std::string& name, double fallback, double min, double max) {
  const std::optional<std::string> text = parsed.option(name);
  return text ? parse_real(*text, name, min, max) : fallback;
}

} // namespace kda::tools
