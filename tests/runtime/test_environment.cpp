// The runtime's KDAJIT_* settings: what parses, and that a value that does
// not is ignored with a warning naming it (never silently, never guessed at).
#include "runtime/environment.hpp"

#include "cache/warnings.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace kda;

TEST_CASE("KDAJIT_DISABLE_JIT takes 0 or 1, KDAJIT_PREPARE_LEAD a fraction", "[runtime][environment]") {
  CHECK(runtime::parse_switch("1") == true);
  CHECK(runtime::parse_switch("0") == false);
  CHECK(runtime::parse_switch("") == false);
  for (const char* bad : {"yes", "true", "01", " 1", "2"}) {
    INFO(bad);
    CHECK_FALSE(runtime::parse_switch(bad).has_value());
  }
  CHECK(runtime::parse_fraction("0.25") == 0.25);
  CHECK(runtime::parse_fraction("0") == 0.0);
  CHECK(runtime::parse_fraction("1") == 1.0);
  for (const char* bad : {"", "abc", "0.5x", "1.5", "-0.1", "nan", "inf", "1e999"}) {
    INFO(bad);
    CHECK_FALSE(runtime::parse_fraction(bad).has_value());
  }
}

TEST_CASE("KDAJIT_PREPARE_STREAMS takes a positive whole number", "[runtime][environment]") {
  CHECK(runtime::parse_positive_count("43") == 43);
  CHECK(runtime::parse_positive_count("1") == 1);
  for (const char* bad : {"", "0", "-3", "4.5", "43x", "99999999999", "many"}) {
    INFO(bad);
    CHECK_FALSE(runtime::parse_positive_count(bad).has_value());
  }
  cache::reset_warnings_for_testing();
  ::setenv("KDAJIT_PREPARE_STREAMS", "half", 1);
  CHECK_FALSE(runtime::prepare_streams_from_environment().has_value());
  const cache::WarningSink ignore = [](const std::string&) {};
  CHECK_FALSE(cache::warn_once(cache::CacheWarning::bad_prepare_streams, ignore, "again")); // warned once
  ::setenv("KDAJIT_PREPARE_STREAMS", "48", 1);
  CHECK(runtime::prepare_streams_from_environment() == 48);
  ::unsetenv("KDAJIT_PREPARE_STREAMS");
  CHECK_FALSE(runtime::prepare_streams_from_environment().has_value());
  cache::reset_warnings_for_testing();
}

TEST_CASE("kernels may run one at a time under CUDA_LAUNCH_BLOCKING=1 or an injected tool", "[runtime][environment]") {
  const char* injected = std::getenv("CUDA_INJECTION64_PATH");
  const std::string saved = injected != nullptr ? injected : "";
  ::unsetenv("CUDA_INJECTION64_PATH");
  ::unsetenv("CUDA_LAUNCH_BLOCKING");
  CHECK_FALSE(runtime::kernels_may_run_one_at_a_time());
  ::setenv("CUDA_LAUNCH_BLOCKING", "0", 1);
  CHECK_FALSE(runtime::kernels_may_run_one_at_a_time());
  ::setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  CHECK(runtime::kernels_may_run_one_at_a_time());
  ::unsetenv("CUDA_LAUNCH_BLOCKING");
  ::setenv("CUDA_INJECTION64_PATH", "/opt/tool/libinjection.so", 1);
  CHECK(runtime::kernels_may_run_one_at_a_time());
  ::setenv("CUDA_INJECTION64_PATH", "", 1);
  CHECK_FALSE(runtime::kernels_may_run_one_at_a_time());
  if (injected != nullptr) {
    ::setenv("CUDA_INJECTION64_PATH", saved.c_str(), 1);
  } else {
    ::unsetenv("CUDA_INJECTION64_PATH");
  }
}

TEST_CASE("KDAJIT_SPLIT_ORDER takes programmatic, streams or serial", "[runtime][environment]") {
  CHECK(runtime::parse_split_order("streams") == runtime::SplitOrder::streams);
  CHECK(runtime::parse_split_order("programmatic") == runtime::SplitOrder::programmatic);
  CHECK(runtime::parse_split_order("serial") == runtime::SplitOrder::serial);
  for (const char* bad : {"", "1", "Programmatic", "streams ", "pdl", "sequential"}) {
    INFO(bad);
    CHECK_FALSE(runtime::parse_split_order(bad).has_value());
  }
  cache::reset_warnings_for_testing();
  ::setenv("KDAJIT_SPLIT_ORDER", "pdl", 1);
  CHECK_FALSE(runtime::split_order_from_environment().has_value());
  const cache::WarningSink ignore = [](const std::string&) {};
  CHECK_FALSE(cache::warn_once(cache::CacheWarning::bad_split_order, ignore, "again")); // warned once
  ::setenv("KDAJIT_SPLIT_ORDER", "programmatic", 1);
  CHECK(runtime::split_order_from_environment() == runtime::SplitOrder::programmatic);
  ::unsetenv("KDAJIT_SPLIT_ORDER");
  CHECK_FALSE(runtime::split_order_from_environment().has_value());
  cache::reset_warnings_for_testing();
}

TEST_CASE("a malformed KDAJIT_DISABLE_JIT or KDAJIT_PREPARE_LEAD leaves the default", "[runtime][environment]") {
  cache::reset_warnings_for_testing();
  ::setenv("KDAJIT_DISABLE_JIT", "yes", 1);
  ::setenv("KDAJIT_PREPARE_LEAD", "half", 1);
  CHECK_FALSE(runtime::jit_disabled_by_environment());
  CHECK_FALSE(runtime::prepare_lead_from_environment().has_value());
  // each was warned about (on stderr): a second warning of its kind is not emitted
  const cache::WarningSink ignore = [](const std::string&) {};
  CHECK_FALSE(cache::warn_once(cache::CacheWarning::bad_disable_jit, ignore, "again"));
  CHECK_FALSE(cache::warn_once(cache::CacheWarning::bad_prepare_lead, ignore, "again"));
  ::setenv("KDAJIT_DISABLE_JIT", "1", 1);
  ::setenv("KDAJIT_PREPARE_LEAD", "0.5", 1);
  CHECK(runtime::jit_disabled_by_environment());
  CHECK(runtime::prepare_lead_from_environment() == 0.5);
  ::unsetenv("KDAJIT_DISABLE_JIT");
  ::unsetenv("KDAJIT_PREPARE_LEAD");
  CHECK_FALSE(runtime::jit_disabled_by_environment());
  CHECK_FALSE(runtime::prepare_lead_from_environment().has_value());
  cache::reset_warnings_for_testing();
}
