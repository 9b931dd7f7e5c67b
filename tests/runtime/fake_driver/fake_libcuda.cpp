// A stand-in libcuda.so.1 for testing which CUDA drivers kdajit accepts and
// which entry-point variants it asks for, on machines without (or with a
// newer) driver. It reports the version in $FAKE_CUDA_DRIVER_VERSION (default
// 12080), no devices, and answers cuGetProcAddress_v2 like a real driver of
// that version: the newest variant not newer than both the requested version
// and the driver. Every request is appended to $FAKE_CUDA_LOG as
//   <name> requested=<v> got=<variant|none> declared=<variant> <verdict>
// where `declared` is the variant cuda.h 13.0 declares under that name and the
// verdict is ok, MISMATCH (the caller would get another variant than its
// prototype), NOT_SUFFICIENT (this driver is too old for it) or UNKNOWN (an
// entry point this table lacks: add it with its variants from cudaTypedefs.h).
// Only the entry points kdajit calls while loading a driver do anything.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

struct Variants {
  const char* name;
  std::vector<int> versions; // by CUDA version, from cudaTypedefs.h (per-thread-stream _v7000 ones left out)
  int declared;              // the one cuda.h 13.0 means by `name`
};

// The variants of every entry point kdajit resolves (runtime/cuda_driver.hpp).
const std::vector<Variants>& table() {
  static const std::vector<Variants> k_table = {
      {"cuGetErrorName", {6000}, 6000},
      {"cuGetErrorString", {6000}, 6000},
      {"cuInit", {2000}, 2000},
      {"cuDriverGetVersion", {2020}, 2020},
      {"cuDeviceGetCount", {2000}, 2000},
      {"cuDeviceGet", {2000}, 2000},
      {"cuDeviceGetAttribute", {2000}, 2000},
      {"cuDeviceGetName", {2000}, 2000},
      {"cuDeviceTotalMem", {2000, 3020}, 3020},
      {"cuCtxGetCurrent", {4000}, 4000},
      {"cuCtxSetCurrent", {4000}, 4000},
      {"cuCtxGetDevice", {2000, 13000}, 2000},   // _v13000 takes a context too
      {"cuCtxSynchronize", {2000, 13000}, 2000}, // likewise
      {"cuDevicePrimaryCtxRetain", {7000}, 7000},
      {"cuDevicePrimaryCtxRelease", {7000, 11000}, 11000},
      {"cuModuleLoadData", {2000}, 2000},
      {"cuModuleUnload", {2000}, 2000},
      {"cuModuleGetFunction", {2000}, 2000},
      {"cuFuncSetAttribute", {9000}, 9000},
      {"cuFuncGetAttribute", {2020}, 2020},
      {"cuLaunchKernel", {4000}, 4000},
      {"cuMemAlloc", {2000, 3020}, 3020},
      {"cuMemFree", {2000, 3020}, 3020},
      {"cuMemAllocAsync", {11020}, 11020},
      {"cuMemFreeAsync", {11020}, 11020},
      {"cuMemcpyHtoD", {2000, 3020}, 3020},
      {"cuMemcpyDtoH", {2000, 3020}, 3020},
      {"cuMemcpyAsync", {4000}, 4000},
      {"cuMemcpyHtoDAsync", {2000, 3020}, 3020},
      {"cuMemcpyDtoHAsync", {2000, 3020}, 3020},
      {"cuMemsetD8Async", {3020}, 3020},
      {"cuStreamCreate", {2000}, 2000},
      {"cuStreamDestroy", {2000, 4000}, 4000},
      {"cuStreamSynchronize", {2000}, 2000},
      {"cuEventCreate", {2000}, 2000},
      {"cuEventRecord", {2000}, 2000},
      {"cuEventSynchronize", {2000}, 2000},
      {"cuEventElapsedTime", {2000, 12080}, 12080}, // cuda.h: cuEventElapsedTime -> cuEventElapsedTime_v2
      {"cuEventDestroy", {2000, 4000}, 4000},
      {"cuPointerGetAttribute", {4000}, 4000},
      {"cuTensorMapEncodeTiled", {12000}, 12000},
      {"cuStreamCreateWithPriority", {5050}, 5050},
      {"cuCtxGetStreamPriorityRange", {5050}, 5050},
      {"cuStreamWaitEvent", {3020}, 3020},
      {"cuMemsetD32Async", {3020}, 3020},
      {"cuStreamIsCapturing", {10000}, 10000},
      {"cuLaunchKernelEx", {11060}, 11060},
      {"cuStreamBeginCapture", {10000, 10010}, 10010},
      {"cuStreamEndCapture", {10000}, 10000},
      {"cuGraphInstantiateWithFlags", {11040}, 11040},
      {"cuGraphLaunch", {10000}, 10000},
      {"cuGraphExecDestroy", {10000}, 10000},
      {"cuGraphDestroy", {10000}, 10000},
      {"cuProfilerStart", {4000}, 4000},
      {"cuProfilerStop", {4000}, 4000},
  };
  return k_table;
}

int driver_version() {
  const char* v = std::getenv("FAKE_CUDA_DRIVER_VERSION");
  return v != nullptr ? std::atoi(v) : 12080;
}

void log_request(const char* name, int requested, int got, int declared, const char* verdict) {
  const char* path = std::getenv("FAKE_CUDA_LOG");
  if (path == nullptr) {
    return;
  }
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s requested=%d got=%d declared=%d %s\n", name, requested, got, declared, verdict);
    std::fclose(f);
  }
}

CUresult fake_get_error_name(CUresult, const char** text) {
  *text = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult fake_get_error_string(CUresult, const char** text) {
  *text = "fake driver";
  return CUDA_SUCCESS;
}
CUresult fake_init(unsigned int) {
  return CUDA_SUCCESS;
}
CUresult fake_driver_get_version(int* version) {
  *version = driver_version();
  return CUDA_SUCCESS;
}
CUresult fake_device_get_count(int* count) {
  *count = 0;
  return CUDA_SUCCESS;
}
// Everything else: never called with no device.
CUresult fake_not_supported() {
  return CUDA_ERROR_NOT_SUPPORTED;
}

void* implementation(std::string_view name) {
  if (name == "cuGetErrorName") return reinterpret_cast<void*>(&fake_get_error_name);
  if (name == "cuGetErrorString") return reinterpret_cast<void*>(&fake_get_error_string);
  if (name == "cuInit") return reinterpret_cast<void*>(&fake_init);
  if (name == "cuDriverGetVersion") return reinterpret_cast<void*>(&fake_driver_get_version);
  if (name == "cuDeviceGetCount") return reinterpret_cast<void*>(&fake_device_get_count);
  return reinterpret_cast<void*>(&fake_not_supported);
}

} // namespace

extern "C" __attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t, CUdriverProcAddressQueryResult* status) {
  *pfn = nullptr;
  const auto& t = table();
  const auto it = std::find_if(t.begin(), t.end(), [&](const Variants& v) { return std::strcmp(v.name, symbol) == 0; });
  if (it == t.end()) {
    log_request(symbol, cuda_version, 0, 0, "UNKNOWN");
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  const int limit = std::min(cuda_version, driver_version());
  int got = 0;
  for (int v : it->versions) {
    if (v <= limit) got = std::max(got, v);
  }
  if (got == 0) {
    const bool exists_later = std::any_of(it->versions.begin(), it->versions.end(), [&](int v) { return v <= cuda_version; });
    log_request(symbol, cuda_version, 0, it->declared, exists_later ? "NOT_SUFFICIENT" : "UNKNOWN");
    if (status != nullptr) *status = exists_later ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  log_request(symbol, cuda_version, got, it->declared, got == it->declared ? "ok" : "MISMATCH");
  *pfn = implementation(symbol);
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
