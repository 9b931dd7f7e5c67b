#include "runtime/context.hpp"

#include "runtime/cuda_driver.hpp"

namespace kda::runtime {
namespace {

CUcontext retained_primary_context() {
  // A function-local static: retained once, even when threads race here.
  static const CUcontext k_context = [] {
    CUdevice device = 0;
    KDA_CU(cuDeviceGet, &device, 0);
    CUcontext context = nullptr;
    check_cu(driver_api().cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain",
             "retaining device 0's primary context");
    return context;
  }();
  return k_context;
}

} // namespace

CUcontext ensure_current_context() {
  CUcontext context = nullptr;
  KDA_CU(cuCtxGetCurrent, &context);
  if (context != nullptr) {
    return context;
  }
  context = retained_primary_context();
  KDA_CU(cuCtxSetCurrent, context);
  return context;
}

CUdevice current_device() {
  ensure_current_context();
  CUdevice device = 0;
  KDA_CU(cuCtxGetDevice, &device);
  return device;
}

} // namespace kda::runtime
