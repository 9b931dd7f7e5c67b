#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <set>
#include <utility>

namespace kda {
namespace {

std::string join_diagnostics(const std::string& source, const std::vector<Diagnostic>& diagnostics) {
  std::string out = fmt::format("schedule {}: {} problem{}", source, diagnostics.size(),
                                diagnostics.size() == 1 ? "" : "s");
  for (const Diagnostic& d : diagnostics) {
    out += "\n  ";
    out += d.to_string();
  }
  return out;
}

} // namespace

std::string Diagnostic::to_string() const {
  return json_path.empty() ? message : json_path + ": " + message;
}

namespace {

// Identical diagnostics once each, and at most k_max_reported of them, then one
// line counting the rest: a hostile file must not make the report grow with
// the square of its size.
constexpr std::size_t k_max_reported = 100;

// Bounds `diagnostics` in place; returns it (for the base's message).
const std::vector<Diagnostic>& bound(std::vector<Diagnostic>& diagnostics) {
  std::vector<Diagnostic> out;
  std::set<std::pair<std::string, std::string>> seen;
  std::size_t rest = 0;
  for (Diagnostic& d : diagnostics) {
    if (!seen.emplace(d.json_path, d.message).second) {
      continue;
    }
    if (out.size() < k_max_reported) {
      out.push_back(std::move(d));
    } else {
      ++rest;
    }
  }
  if (rest > 0) {
    out.push_back({"", fmt::format("and {} more problem{} not listed", rest, rest == 1 ? "" : "s")});
  }
  diagnostics = std::move(out);
  return diagnostics;
}

} // namespace

// The base is initialised first: it bounds the diagnostics the member then takes.
ScheduleError::ScheduleError(std::string source, std::vector<Diagnostic> diagnostics)
    : Error(join_diagnostics(source, bound(diagnostics))), m_source(std::move(source)),
      m_diagnostics(std::move(diagnostics)) {}

TensorError::TensorError(std::string argument, const std::string& message)
    : Error(fmt::format("argument '{}': {}", argument, message)), m_argument(std::move(argument)) {}

ToolchainError::ToolchainError(const std::string& message, std::string log, std::vector<std::string> options,
                               std::string source_path)
    : Error(message), m_log(std::move(log)), m_options(std::move(options)), m_source_path(std::move(source_path)) {}

void internal_assert_failed(const char* condition, const char* file, int line, const std::string& what) {
  throw InternalError(fmt::format("internal error at {}:{}: {} ({})", file, line, what, condition));
}

} // namespace kda
