// A program built against the installed kdajit (find_package or pkg-config)
// with nothing but its headers and libkdajit.so: kdajit's exceptions reach
// it across the library boundary and are caught by their own types and as
// std::exception; the C API reports the same failure as a status. Runs with
// or without a GPU: without a driver the call fails with ToolchainError, with
// one the empty arguments fail with TensorError.
#include "kdajit/kda.hpp"
#include "kdajit/kda_c.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

int main() {
  int failures = 0;
  const kda::PrefillArgs empty; // no tensors
  try {
    kda::recurrent_kda_prefill(empty);
    std::puts("recurrent_kda_prefill accepted empty arguments");
    ++failures;
  } catch (const kda::TensorError& e) {
    std::printf("caught kda::TensorError (argument '%s'): %s\n", e.argument().c_str(), e.what());
  } catch (const kda::ToolchainError& e) {
    std::printf("caught kda::ToolchainError: %s\n", e.what());
  } catch (const kda::Error& e) {
    std::printf("caught another kda::Error: %s\n", e.what());
    ++failures;
  }
  try {
    const kda::PrefillPlan plan(empty);
    ++failures;
  } catch (const std::exception& e) { // the base from the caller's own libstdc++
    std::printf("caught std::exception from PrefillPlan: %s\n", e.what());
  }
  kda_prefill_args c;
  kda_prefill_args_init(&c);
  const kda_status status = kda_recurrent_prefill(&c, nullptr, nullptr, nullptr, nullptr);
  std::printf("kda_recurrent_prefill: status %d, %s\n", static_cast<int>(status), kda_last_error());
  failures += status == KDA_OK || std::strlen(kda_last_error()) == 0 ? 1 : 0;
  const std::string shape = kda::shape_string({2, 8192, 96, 128});
  failures += shape == "[2, 8192, 96, 128]" ? 0 : 1;
  std::printf("kdajit %s: %s\n", kda_version(), failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
