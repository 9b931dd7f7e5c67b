/// \file
/// The CUDA driver, loaded with dlopen("libcuda.so.1") (kdajit never links
/// libcuda or its stub). Only cuGetProcAddress_v2 is looked up by name; every
/// other entry point is resolved through it for the CUDA_VERSION of the headers
/// (cuda.h maps names to versioned symbols, e.g. cuMemAlloc → cuMemAlloc_v2, so
/// dlsym names are never guessed). cuda.h and cudaProfiler.h are included for their types only.
///
/// A machine without a driver or GPU is a state, not a crash: driver_status()
/// says why and kdajit runs compile-only. All error checking of driver calls
/// goes through check_cu() (KDA_CU for the common case).
#pragma once

#include "compiler/errors.hpp"

#include <cuda.h>
#include <cudaProfiler.h>

#include <cstdint>
#include <string>

namespace kda::runtime {

// X-macro list of the entry points in DriverApi: the struct and the resolver
// are generated from it, so they cannot drift apart.
#define KDA_DRIVER_ENTRY_POINTS(X)                                                                           \
  X(cuGetErrorName) X(cuGetErrorString) X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet)    \
  X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDeviceTotalMem) X(cuCtxGetCurrent) X(cuCtxSetCurrent)        \
  X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)              \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute)    \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemcpyHtoD)          \
  X(cuMemcpyDtoH) X(cuMemcpyAsync) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async)              \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord)              \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuPointerGetAttribute)                    \
  X(cuTensorMapEncodeTiled) X(cuStreamCreateWithPriority) X(cuCtxGetStreamPriorityRange) X(cuStreamWaitEvent)  \
  X(cuMemsetD32Async) X(cuStreamIsCapturing) X(cuLaunchKernelEx) X(cuStreamBeginCapture) X(cuStreamEndCapture)    \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuProfilerStart)  \
  X(cuProfilerStop)

/// The driver entry points kdajit calls. Members carry the driver's names (as
/// cuda.h spells them after its versioning macros, so `api.cuMemAlloc(...)`
/// calls cuMemAlloc_v2).
struct DriverApi {
#define KDA_DRIVER_DECLARE(name) decltype(&::name) name = nullptr;
  KDA_DRIVER_ENTRY_POINTS(KDA_DRIVER_DECLARE)
#undef KDA_DRIVER_DECLARE
};

/// Whether the driver can be used, and if not, why.
struct DriverStatus {
  bool available = false;
  std::string reason;       ///< why not, e.g. "libcuda.so.1: cannot open shared object file: ..."
  std::string library_path; ///< what dlopen opened, when it did
  int driver_version = 0;   ///< cuDriverGetVersion, e.g. 13000; 0 when unknown
  int device_count = 0;

  /// "CUDA driver 13.0 (libcuda.so.1), 1 device" or "<reason>; compile-only mode".
  std::string to_string() const;
};

/// The oldest CUDA driver version kdajit accepts (12080: cuda_driver.cpp says why).
int oldest_supported_driver();

/// Loads and initialises the driver once per process (thread-safe); never throws.
const DriverStatus& driver_status();

/// The resolved entry points; throws ToolchainError with driver_status()'s
/// reason when the driver is unavailable.
const DriverApi& driver_api();

/// Driver-call metering, for host-time measurements (`kdajit bench`): while
/// it is on, every entry point of driver_api() counts its calls and the time
/// spent in them, per calling thread. Off by default (then driver_api() hands
/// out the driver's own entry points and nothing is counted). Either way it
/// drops the calling thread's pending mark (mark_driver_call_start), so a mark
/// from a call that failed before it enqueued is not charged to a later call.
void set_driver_metering(bool on);

struct DriverCallTally {
  std::int64_t calls = 0;
  std::int64_t nanoseconds = 0; ///< inside the driver's entry points
  /// From each mark (mark_driver_call_start) to the return of the first
  /// entry point after it that puts work on a stream: a kernel launch, a
  /// memset or copy, an event record, a stream wait or a graph launch.
  std::int64_t until_first_enqueue_nanoseconds = 0;
  std::int64_t marks_reached = 0; ///< marks followed by such an entry point
};

/// This thread's totals while metering was on (subtract two readings).
DriverCallTally driver_call_tally();

/// Marks the start of a call on this thread, for until_first_enqueue_nanoseconds
/// (while metering is on; a mark never followed by an enqueue adds nothing
/// and is replaced by the next mark).
void mark_driver_call_start();

/// A failed driver call: the call's name, the CUresult's name and description.
class DriverError : public ToolchainError {
public:
  DriverError(const std::string& message, CUresult result) : ToolchainError(message), m_result(result) {}
  CUresult result() const { return m_result; }

private:
  CUresult m_result;
};

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; works without a driver too.
std::string describe_cu_result(CUresult result);

[[noreturn]] void throw_driver_error(CUresult result, const char* call, const std::string& context);

/// Throws DriverError "[context: ]call failed: NAME (description)" unless
/// `result` is CUDA_SUCCESS. The one place driver results are checked.
inline void check_cu(CUresult result, const char* call, const std::string& context = {}) {
  if (result != CUDA_SUCCESS) {
    throw_driver_error(result, call, context);
  }
}

} // namespace kda::runtime

/// KDA_CU(cuMemAlloc, &ptr, bytes): calls the entry point through driver_api()
/// and checks its result, naming the call in the error.
#define KDA_CU(fn, ...) ::kda::runtime::check_cu(::kda::runtime::driver_api().fn(__VA_ARGS__), #fn)
