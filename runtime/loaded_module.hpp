/// \file
/// A cubin loaded into the calling thread's current context (see
/// ensure_current_context()), its entry points by name with their attributes,
/// and one launch helper for every kernel.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kda::runtime {

/// Launch geometry (the driver API has no dim3).
struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;
};

/// What the driver reports for a loaded function (cuFuncGetAttribute).
struct FunctionAttributes {
  int num_regs = 0;
  int shared_size_bytes = 0;             ///< static SMEM
  int local_size_bytes = 0;              ///< per-thread local memory (stack, spills)
  int max_threads_per_block = 0;
  int binary_version = 0;                ///< e.g. 90 for an sm_90 / sm_90a cubin
  int max_dynamic_shared_size_bytes = 0; ///< current opt-in limit (49,152 until raised)
};

struct LoadedFunction {
  std::string name;
  CUfunction function = nullptr;
  FunctionAttributes attributes;
};

class LoadedModule {
public:
  /// Loads `cubin` (or a fatbin) into the current context and looks up each
  /// entry point. When `max_dynamic_smem_bytes` > 0 it is set on every entry.
  /// Throws DriverError naming the call and entry that failed.
  static LoadedModule load(const std::vector<std::uint8_t>& cubin, const std::vector<std::string>& entry_names,
                           int max_dynamic_smem_bytes = 0);

  LoadedModule(LoadedModule&& other) noexcept;
  LoadedModule& operator=(LoadedModule&& other) noexcept;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule(); ///< unloads (errors are ignored: it may run at process exit)

  /// The entry point `name`; a name not passed to load() is a kdajit bug (InternalError).
  const LoadedFunction& function(std::string_view name) const;
  const std::vector<LoadedFunction>& functions() const { return m_functions; }

  /// Sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES on `name` and
  /// re-reads its attributes.
  void set_max_dynamic_smem(std::string_view name, int bytes);

  CUmodule module() const { return m_module; }
  CUcontext context() const { return m_context; }
  /// Wall time of load(): cuModuleLoadData and the entry lookups (`kdajit first-call`).
  double load_ms() const { return m_load_ms; }

private:
  LoadedModule() = default;
  std::size_t index_of(std::string_view name) const;
  void unload() noexcept;

  CUmodule m_module = nullptr;
  CUcontext m_context = nullptr;
  std::vector<LoadedFunction> m_functions;
  double m_load_ms = 0.0;
};

/// How a launch orders against the kernel before it in the stream.
enum class StreamOrder {
  serialized,   ///< starts once that kernel has completed (cuLaunchKernel)
  programmatic, ///< may start while it finishes (programmatic stream serialization,
                ///< sm_90+): the kernel waits for its results itself (griddepcontrol.wait)
};

/// How a launch is made beyond its grid.
struct LaunchAttributes {
  StreamOrder order = StreamOrder::serialized;
  /// The kernel's scheduling priority (CU_LAUNCH_ATTRIBUTE_PRIORITY) instead
  /// of its stream's: a captured launch keeps it in the graph's kernel node,
  /// where the stream's priority does not travel.
  std::optional<int> priority;
};

/// Launches `function` on `stream`; `args` points to one pointer per kernel
/// parameter. Throws DriverError when the launch is rejected (asynchronous
/// faults surface at the next synchronizing call).
void launch(CUfunction function, Dim3 grid, Dim3 block, unsigned dynamic_smem_bytes, CUstream stream, void** args,
            const LaunchAttributes& attributes = {});

} // namespace kda::runtime
