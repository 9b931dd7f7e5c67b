#include "compiler/errors.hpp"
#include "runtime/nvrtc_library.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

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
  REQUIRE(candidates.size() >= 3);
  CHECK(candidates[0] == "libnvrtc.so.13");
  CHECK(candidates[1] == "libnvrtc.so.12");
  CHECK(candidates[2] == "libnvrtc.so");
  CHECK(std::all_of(candidates.begin() + 3, candidates.end(),
                    [](const std::string& c) { return c.starts_with("/"); }));
}

TEST_CASE("nvrtc library: added candidates come after the loader's search path", "[runtime][nvrtc]") {
  runtime::NvrtcLibrary::get(); // loaded: later additions are refused
  CHECK_FALSE(runtime::add_nvrtc_library_candidate("/opt/nvidia/cu13/lib/libnvrtc.so.13"));
  if (!runtime::nvrtc_library_override()) {
    const std::vector<std::string> candidates = runtime::nvrtc_library_candidates();
    CHECK(std::find(candidates.begin(), candidates.end(), "/opt/nvidia/cu13/lib/libnvrtc.so.13") ==
          candidates.end());
  }
}

TEST_CASE("nvrtc library: an NVRTC newer than the driver's major is passed over", "[runtime][nvrtc]") {
  const runtime::NvrtcLibrary& loaded = runtime::NvrtcLibrary::get();
  const int major = loaded.version().major;
  // as if the driver were one major older: the loaded NVRTC is refused, with the reason
  try {
    runtime::NvrtcLibrary::load({loaded.path()}, major - 1);
    FAIL("expected ToolchainError");
  } catch (const ToolchainError& e) {
    CHECK_THAT(e.what(), Contains(fmt::format("cannot load NVRTC {} or older", major - 1)));
    CHECK_THAT(e.what(), Contains(fmt::format("builds cubins the CUDA {} driver cannot load", major - 1)));
  }
  // the same major is accepted, and a refused candidate does not stop the search
  const runtime::NvrtcLibrary again = runtime::NvrtcLibrary::load({"libnvrtc-missing.so.99", loaded.path()}, major);
  CHECK(again.version() == loaded.version());
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
