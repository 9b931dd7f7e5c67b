#include "cache/warnings.hpp"

#include <array>
#include <cstdio>
#include <mutex>

namespace kda::cache {
namespace {

std::mutex g_mutex;
std::array<bool, static_cast<std::size_t>(CacheWarning::count_)> g_emitted{};

} // namespace

WarningSink stderr_warning_sink() {
  return [](const std::string& message) { std::fprintf(stderr, "kdajit: warning: %s\n", message.c_str()); };
}

bool warn_once(CacheWarning kind, const WarningSink& sink, const std::string& message) {
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    bool& emitted = g_emitted[static_cast<std::size_t>(kind)];
    if (emitted) {
      return false;
    }
    emitted = true;
  }
  if (sink) {
    sink(message);
  }
  return true;
}

void reset_warnings_for_testing() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_emitted.fill(false);
}

} // namespace kda::cache
