#include "runtime/cuda_driver.hpp"

#include "runtime/dynamic_library.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kda::runtime {
namespace {

constexpr const char* k_driver_library = "libcuda.so.1";

/// The oldest driver kdajit accepts: CUDA 12.8. Every entry point it calls is
/// resolved at the variant cuda.h (13.0) declares, and the newest of those
/// variants is cuEventElapsedTime_v2, added in 12.8 (the rest date from 12.0
/// or earlier: cuTensorMapEncodeTiled 12.0, cuLaunchKernelEx 11.6). 12.8 is
/// also the first release that knows the Blackwell targets kdajit compiles
/// for. Cubins built by NVRTC 13 need a 13 driver: the NVRTC library is chosen
/// by the driver's major (nvrtc_library.hpp) and bundle entries are filtered
/// the same way (kernel_registry.cpp).
constexpr int k_oldest_driver = 12080;

struct LoadedDriver {
  DynamicLibrary library;
  DriverApi api;
  DriverStatus status;
};

std::string version_text(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

/// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", from `api`'s
/// own error functions when they were resolved. (While loading, the table is
/// not yet published through loaded_driver(), so it is passed in.)
std::string describe(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName != nullptr) {
    api.cuGetErrorName(result, &name);
  }
  if (api.cuGetErrorString != nullptr) {
    api.cuGetErrorString(result, &text);
  }
  return fmt::format("{} ({})", name != nullptr ? name : "CUresult " + std::to_string(static_cast<int>(result)),
                     text != nullptr ? text : "no description");
}

/// The CUDA version to ask cuGetProcAddress for `name`. It returns the newest
/// variant not newer than both the version asked for and the driver (so a
/// 12.8 driver asked for 13.0 hands out its 12.8 variants, which for every
/// entry point here are the ones cuda.h 13.0 declares), and CUDA 13.0 added
/// cuCtxSynchronize_v13000(CUcontext) and cuCtxGetDevice_v13000(CUdevice*,
/// CUcontext) next to the cuda.h prototypes we call (cudaTypedefs.h:
/// PFN_cuCtxSynchronize_v2000, PFN_cuCtxGetDevice_v2000). Asking those two for
/// CUDA_VERSION would hand back a function with another signature.
int requested_version(const char* name) {
  static constexpr std::pair<const char*, int> k_pinned[] = {{"cuCtxSynchronize", 2000}, {"cuCtxGetDevice", 2000}};
  for (const auto& [pinned, version] : k_pinned) {
    if (std::string_view(name) == pinned) {
      return version;
    }
  }
  return CUDA_VERSION;
}

/// Resolves every entry point through cuGetProcAddress; the reason on failure.
std::string resolve_all(decltype(&::cuGetProcAddress_v2) get_proc, DriverApi& api) {
  constexpr std::size_t k_names_in_message = 4;
  std::vector<std::string> missing;
  CUresult call_error = CUDA_SUCCESS;
  const auto resolve = [&](auto& slot, const char* name) {
    void* address = nullptr;
    CUdriverProcAddressQueryResult query = CU_GET_PROC_ADDRESS_SUCCESS;
    const CUresult r = get_proc(name, &address, requested_version(name), CU_GET_PROC_ADDRESS_DEFAULT, &query);
    if (r != CUDA_SUCCESS && call_error == CUDA_SUCCESS) {
      call_error = r;
    }
    if (r != CUDA_SUCCESS || address == nullptr || query != CU_GET_PROC_ADDRESS_SUCCESS) {
      const bool too_old = query == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      missing.push_back(fmt::format("{} ({})", name, too_old ? "driver too old" : "not found"));
      return;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
#define KDA_DRIVER_RESOLVE(name) resolve(api.name, #name);
  KDA_DRIVER_ENTRY_POINTS(KDA_DRIVER_RESOLVE)
#undef KDA_DRIVER_RESOLVE
  if (call_error == CUDA_ERROR_STUB_LIBRARY) {
    return fmt::format("{} is the CUDA toolkit's stub library, not a driver (cuGetProcAddress returned "
                       "CUDA_ERROR_STUB_LIBRARY)",
                       k_driver_library);
  }
  if (missing.empty()) {
    return {};
  }
  std::string names;
  for (std::size_t i = 0; i < missing.size() && i < k_names_in_message; ++i) {
    names += (i == 0 ? "" : ", ") + missing[i];
  }
  if (missing.size() > k_names_in_message) {
    names += fmt::format(" and {} more", missing.size() - k_names_in_message);
  }
  return fmt::format("{}: cuGetProcAddress cannot resolve {}{}", k_driver_library, names,
                     call_error == CUDA_SUCCESS ? std::string()
                                                : fmt::format(" (CUresult {})", static_cast<int>(call_error)));
}

LoadedDriver load_driver() {
  LoadedDriver d;
  d.library = DynamicLibrary::open_first({k_driver_library});
  if (!d.library.is_open()) {
    d.status.reason = d.library.joined_errors();
    return d;
  }
  d.status.library_path = d.library.path();
  auto get_proc = reinterpret_cast<decltype(&::cuGetProcAddress_v2)>(d.library.symbol("cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    d.status.reason = fmt::format("{} has no cuGetProcAddress_v2 (a driver older than CUDA 12)", k_driver_library);
    return d;
  }
  if (std::string missing = resolve_all(get_proc, d.api); !missing.empty()) {
    d.status.reason = std::move(missing);
    return d;
  }
  if (const CUresult r = d.api.cuDriverGetVersion(&d.status.driver_version); r != CUDA_SUCCESS) {
    d.status.reason = fmt::format("cuDriverGetVersion failed: {}", describe(d.api, r));
    return d;
  }
  if (d.status.driver_version < k_oldest_driver) {
    d.status.reason = fmt::format("CUDA driver {} is older than {}, the oldest kdajit supports",
                                  version_text(d.status.driver_version), version_text(k_oldest_driver));
    return d;
  }
  if (const CUresult r = d.api.cuInit(0); r != CUDA_SUCCESS) {
    d.status.reason = fmt::format("cuInit failed: {}", describe(d.api, r));
    return d;
  }
  if (const CUresult r = d.api.cuDeviceGetCount(&d.status.device_count); r != CUDA_SUCCESS) {
    d.status.reason = fmt::format("cuDeviceGetCount failed: {}", describe(d.api, r));
    return d;
  }
  if (d.status.device_count == 0) {
    d.status.reason = "the CUDA driver reports no device";
    return d;
  }
  d.status.available = true;
  return d;
}

const LoadedDriver& loaded_driver() {
  static const LoadedDriver k_driver = [] {
    try {
      return load_driver();
    } catch (const std::exception& e) {
      LoadedDriver d;
      d.status.reason = fmt::format("loading the CUDA driver failed: {}", e.what());
      return d;
    }
  }();
  return k_driver;
}

thread_local DriverCallTally t_tally;
thread_local std::optional<std::chrono::steady_clock::time_point> t_mark;
std::atomic<bool> g_metering{false};

// The entry points that put work on a stream (DriverCallTally's
// until_first_enqueue_nanoseconds ends at the first of them after a mark).
template <auto Entry>
constexpr bool k_enqueues = false;
#define KDA_ENQUEUES(name)                                                                                             \
  template <>                                                                                                          \
  constexpr bool k_enqueues<&DriverApi::name> = true;
KDA_ENQUEUES(cuLaunchKernel)
KDA_ENQUEUES(cuLaunchKernelEx)
KDA_ENQUEUES(cuGraphLaunch)
KDA_ENQUEUES(cuMemsetD8Async)
KDA_ENQUEUES(cuMemsetD32Async)
KDA_ENQUEUES(cuMemcpyAsync)
KDA_ENQUEUES(cuMemcpyHtoDAsync)
KDA_ENQUEUES(cuMemcpyDtoHAsync)
KDA_ENQUEUES(cuEventRecord)
KDA_ENQUEUES(cuStreamWaitEvent)
#undef KDA_ENQUEUES

std::int64_t nanoseconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// An entry point that counts itself: calls the driver's own through the
// loaded table and adds the time to the calling thread's tally.
template <auto Entry>
struct Metered;

template <typename R, typename... A, R (*DriverApi::*Entry)(A...)>
struct Metered<Entry> {
  static R call(A... a) {
    const auto begin = std::chrono::steady_clock::now();
    R r = (loaded_driver().api.*Entry)(a...);
    const auto end = std::chrono::steady_clock::now();
    t_tally.nanoseconds += nanoseconds_between(begin, end);
    ++t_tally.calls;
    if constexpr (k_enqueues<Entry>) {
      if (t_mark) {
        t_tally.until_first_enqueue_nanoseconds += nanoseconds_between(*t_mark, end);
        ++t_tally.marks_reached;
        t_mark.reset();
      }
    }
    return r;
  }
};

const DriverApi& metered_api() {
  static const DriverApi k_api = [] {
    DriverApi api;
#define KDA_DRIVER_METER(name) api.name = &Metered<&DriverApi::name>::call;
    KDA_DRIVER_ENTRY_POINTS(KDA_DRIVER_METER)
#undef KDA_DRIVER_METER
    return api;
  }();
  return k_api;
}

} // namespace

int oldest_supported_driver() {
  return k_oldest_driver;
}

void set_driver_metering(bool on) {
  g_metering.store(on, std::memory_order_relaxed);
  t_mark.reset(); // a mark left by a call that never enqueued must not reach a later call
}

DriverCallTally driver_call_tally() {
  return t_tally;
}

void mark_driver_call_start() {
  if (g_metering.load(std::memory_order_relaxed)) {
    t_mark = std::chrono::steady_clock::now();
  }
}

std::string DriverStatus::to_string() const {
  if (!available) {
    return reason + "; compile-only mode";
  }
  return fmt::format("CUDA driver {} ({}), {} device{}", version_text(driver_version), library_path, device_count,
                     device_count == 1 ? "" : "s");
}

const DriverStatus& driver_status() {
  return loaded_driver().status;
}

const DriverApi& driver_api() {
  const LoadedDriver& d = loaded_driver();
  if (!d.status.available) {
    throw ToolchainError(fmt::format("the CUDA driver is unavailable: {}", d.status.to_string()));
  }
  return g_metering.load(std::memory_order_relaxed) ? metered_api() : d.api;
}

std::string describe_cu_result(CUresult result) {
  return describe(loaded_driver().api, result);
}

void throw_driver_error(CUresult result, const char* call, const std::string& context) {
  throw DriverError(fmt::format("{}{}{} failed: {}", context, context.empty() ? "" : ": ", call,
                                describe_cu_result(result)),
                    result);
}

} // namespace kda::runtime
