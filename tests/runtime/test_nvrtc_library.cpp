#include "compiler/errors.hpp"
#include "runtime/nvrtc_library.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace kda;
using Catch::Contains;

TEST_CASE("nvrtc library: loads and reports its version", "[runtime][nvrtc]") {
  const runtime::NvrtcLibrary& library = runtime::NvrtcLibrary::get();
  CHECK_FALSE(library.path().empty());
  CHECK(library.version().major >= 12);
  CHECK(library.error_string(NVRTC_ERROR_COMPILATION) == "NVRTC_ERROR_COMPILATION");
  CHECK(&runtime::NvrtcLibrary::get() == &library); // loaded once
}

TEST_CASE("nvrtc library: candidates without an override", "[runtime][nvrtc]") {
  if (runtime::nvrtc_library_override()) {
    SUCCEED("KDAJIT_NVRTC_LIBRARY is set; the override alone is tried");
    CHECK(runtime::nvrtc_library_candidates().size() == 1);
    return;
  }
  const std::vector<std::string> candidates = runtime::nvrtc_library_candidates();
  REQUIRE(candidates.size() >= 2);
  CHECK(candidates[0] == "libnvrtc.so.13");
  CHECK(candidates[1] == "libnvrtc.so");
  CHECK(std::all_of(candidates.begin() + 2, candidates.end(),
                    [](const std::string& c) { return c.ends_with("/libnvrtc.so.13"); }));
}

TEST_CASE("nvrtc library: a failed load names every candidate tried", "[runtime][nvrtc]") {
  try {
    runtime::NvrtcLibrary::load({"libnvrtc-missing.so.99", "/nonexistent/libnvrtc.so.13"});
    FAIL("expected ToolchainError");
  } catch (const ToolchainError& e) {
    CHECK_THAT(e.what(), Contains("cannot load NVRTC"));
    CHECK_THAT(e.what(), Contains("libnvrtc-missing.so.99"));
    CHECK_THAT(e.what(), Contains("/nonexistent/libnvrtc.so.13"));
    CHECK_THAT(e.what(), Contains("KDAJIT_NVRTC_LIBRARY"));
  }
}
