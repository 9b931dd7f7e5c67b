#include "runtime/environment.hpp"

#include "cache/warnings.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kda::runtime {

std::optional<bool> parse_switch(std::string_view text) {
  if (text == "1") {
    return true;
  }
  if (text == "0" || text.empty()) {
    return false;
  }
  return std::nullopt;
}

std::optional<double> parse_fraction(std::string_view text) {
  double value = -1.0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || !(value >= 0.0 && value <= 1.0)) {
    return std::nullopt;
  }
  return value;
}

std::optional<int> parse_positive_count(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < 1) {
    return std::nullopt;
  }
  return value;
}

std::optional<SplitOrder> parse_split_order(std::string_view text) {
  if (text == "streams") {
    return SplitOrder::streams;
  }
  if (text == "programmatic") {
    return SplitOrder::programmatic;
  }
  if (text == "serial") {
    return SplitOrder::serial;
  }
  return std::nullopt;
}

namespace {

// A switch variable (1 or 0, parse_switch): its value, or `fallback` when it
// is unset or malformed (warned about once, `ignored` saying what then holds).
bool switch_from_environment(const char* name, bool fallback, cache::CacheWarning warning, std::string_view ignored) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    return fallback;
  }
  const std::optional<bool> on = parse_switch(text);
  if (!on) {
    cache::warn_once(warning, cache::stderr_warning_sink(), fmt::format("ignored {}={}: {}", name, text, ignored));
  }
  return on.value_or(fallback);
}

// A measurement aid's value (`parse` of the variable), nullopt when it is
// unset or malformed (warned about once, `expects` saying what it takes).
template <class T>
std::optional<T> measurement_aid(const char* name, std::optional<T> (*parse)(std::string_view),
                                 cache::CacheWarning warning, std::string_view expects) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    return std::nullopt;
  }
  const std::optional<T> value = parse(text);
  if (!value) {
    cache::warn_once(warning, cache::stderr_warning_sink(), fmt::format("ignored {}={}: {}", name, text, expects));
  }
  return value;
}

} // namespace

bool jit_disabled_by_environment() {
  return switch_from_environment("KDAJIT_DISABLE_JIT", false, cache::CacheWarning::bad_disable_jit,
                                 "it takes 1 (JIT off) or 0 (on); JIT stays on");
}

bool tiered_by_environment() {
  return switch_from_environment("KDAJIT_TIERED", false, cache::CacheWarning::bad_tiered,
                                 "it takes 1 (tiered JIT) or 0 (off); it stays off");
}

std::optional<double> prepare_lead_from_environment() {
  return measurement_aid("KDAJIT_PREPARE_LEAD", parse_fraction, cache::CacheWarning::bad_prepare_lead,
                         "it takes a fraction from 0 to 1");
}

std::optional<int> prepare_streams_from_environment() {
  return measurement_aid("KDAJIT_PREPARE_STREAMS", parse_positive_count, cache::CacheWarning::bad_prepare_streams,
                         "it takes a positive whole number");
}

bool kernels_may_run_one_at_a_time() {
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  return (blocking != nullptr && std::string_view(blocking) == "1") || (injection != nullptr && *injection != '\0');
}

std::optional<SplitOrder> split_order_from_environment() {
  return measurement_aid("KDAJIT_SPLIT_ORDER", parse_split_order, cache::CacheWarning::bad_split_order,
                         "it takes programmatic, streams or serial");
}

} // namespace kda::runtime
