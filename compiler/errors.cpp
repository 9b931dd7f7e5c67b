#include "compiler/errors.hpp"

#include <fmt/format.h>

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

ScheduleError::ScheduleError(std::string source, std::vector<Diagnostic> diagnostics)
    : Error(join_diagnostics(source, diagnostics)), m_source(std::move(source)),
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
