/// \file
/// Where kernels come from at run time: the in-memory table, then the disk
/// cache, then NVRTC (single-flight per key across threads and processes, in
/// cache::DiskCache::get_or_build). Emission runs only on a miss of both
/// tables. Loaded modules are kept per CUDA context.
#pragma once

#include "cache/disk_cache.hpp"
#include "cache/eviction.hpp"
#include "compiler/kernel_plan.hpp"
#include "compiler/schedule.hpp"
#include "runtime/loaded_module.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kda {

struct PreparedKernel {
  KernelPlan plan;
  cache::CacheKey key;
  cache::CacheEntryPtr entry; ///< the cubin and its manifest
};

class KernelRegistry {
public:
  /// The process-wide registry (cache directory from the environment).
  static KernelRegistry& instance();

  /// The compiled kernel for (schedule, target, shape): no GPU needed.
  std::shared_ptr<const PreparedKernel> prepare(const Schedule& schedule, const Target& target,
                                                const ShapeKey& shape);

  /// The kernel's module loaded into the calling thread's current context
  /// (each entry's max dynamic SMEM set from the plan).
  const runtime::LoadedModule& module_for(const PreparedKernel& kernel);

  cache::DiskCache& disk_cache() { return *m_cache; }

  /// NVRTC version string used in keys ("13.0"); loads NVRTC.
  const std::string& nvrtc_version();
  /// What a current entry's key fields say (gc's orphans are the others);
  /// the NVRTC field is empty when NVRTC cannot be loaded here.
  cache::CurrentIdentity current_identity();

private:
  KernelRegistry();

  std::mutex m_mutex;
  std::unique_ptr<cache::DiskCache> m_cache;
  std::map<std::string, std::shared_ptr<const PreparedKernel>> m_prepared;
  std::map<std::pair<void*, std::string>, std::unique_ptr<runtime::LoadedModule>> m_modules;
  std::string m_nvrtc_version;
};

} // namespace kda
