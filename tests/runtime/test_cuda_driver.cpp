// The driver layer on any machine: with no driver or GPU it reports
// compile-only mode as a value; with one it reports the driver and devices.
#include "runtime/cuda_driver.hpp"
#include "runtime/device_info.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using Catch::Contains;

TEST_CASE("cuda driver: status is a value, never an exception", "[runtime][driver]") {
  const runtime::DriverStatus* status = nullptr;
  REQUIRE_NOTHROW(status = &runtime::driver_status());
  CHECK(&runtime::driver_status() == status); // loaded once
  if (!status->available) {
    CHECK_FALSE(status->reason.empty());
    CHECK_THAT(status->to_string(), Contains("compile-only mode"));
    CHECK_THROWS_WITH(runtime::driver_api(), Contains("the CUDA driver is unavailable"));
    CHECK(runtime::list_devices().empty());
    CHECK_THROWS_AS(runtime::query_device(0), ToolchainError);
  } else {
    CHECK(status->reason.empty());
    CHECK(status->driver_version >= CUDA_VERSION);
    CHECK(status->device_count > 0);
    CHECK_THAT(status->to_string(), Contains("CUDA driver"));
    CHECK(runtime::driver_api().cuLaunchKernel != nullptr);
  }
}

TEST_CASE("cuda driver: check_cu names the call and the error", "[runtime][driver]") {
  CHECK_NOTHROW(runtime::check_cu(CUDA_SUCCESS, "cuInit"));
  try {
    runtime::check_cu(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "allocating the output");
    FAIL("expected DriverError");
  } catch (const runtime::DriverError& e) {
    CHECK(e.result() == CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_THAT(e.what(), Contains("allocating the output: cuMemAlloc failed: "));
    if (runtime::driver_status().available) {
      CHECK_THAT(e.what(), Contains("CUDA_ERROR_OUT_OF_MEMORY"));
    } else {
      CHECK_THAT(e.what(), Contains("CUresult 2"));
    }
  }
}
