/// \file
/// Where kernels come from at run time, in this order: the in-memory table,
/// the registered bundles (KDAJIT_BUNDLE_PATH, register_bundle()), the disk
/// cache, then NVRTC (single-flight per key across threads and processes, in
/// cache::DiskCache::get_or_build). With JIT off (KDAJIT_DISABLE_JIT=1, or
/// set_jit_enabled(false)) the last step is a ToolchainError naming the key
/// and the command that would build it. Bundle entries of another generator,
/// argument ABI or cache layout are skipped with one warning per bundle.
/// Loaded modules are kept per CUDA context.
#pragma once

#include "cache/bundle.hpp"
#include "cache/disk_cache.hpp"
#include "runtime/generator_identity.hpp"
#include "cache/eviction.hpp"
#include "compiler/kernel_plan.hpp"
#include "compiler/schedule.hpp"
#include "compiler/shape_key.hpp"
#include "runtime/loaded_module.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace kda {

struct PreparedKernel {
  KernelPlan plan;
  cache::CacheKey key;
  cache::CacheEntryPtr entry; ///< the cubin and its manifest
};

class KernelRegistry {
public:
  /// The process-wide registry (cache directory, bundles and the JIT switch
  /// from the environment).
  static KernelRegistry& instance();

  /// A registry of its own (tests, tools): no bundles, JIT on.
  explicit KernelRegistry(cache::CacheConfig config);

  /// Serves the bundle's entries (those of this generator, ABI and cache
  /// layout) before the disk cache. Throws CacheError for an unreadable or
  /// corrupt bundle. Returns how many entries it registered.
  std::size_t register_bundle(const std::string& path, std::ostream* warnings = nullptr);
  /// Whether a miss of every table may compile with NVRTC.
  void set_jit_enabled(bool enabled);
  /// Where lookups report a bundle entry they skip (a cubin that fails its
  /// SHA-256): std::cerr unless set (tests).
  void set_warning_stream(std::ostream* warnings);
  /// Kernels served from bundles so far.
  std::size_t bundle_hits() const { return m_bundle_hits; }
  /// The registered bundles: (path, entries).
  std::vector<std::pair<std::string, std::size_t>> bundles();
  bool jit_enabled();

  /// The compiled kernel for (schedule, target, shape): no GPU needed.
  std::shared_ptr<const PreparedKernel> prepare(const Schedule& schedule, const Target& target,
                                                const ShapeKey& shape);
  /// The same kernel only when it needs no compile (this registry has it, a
  /// bundle or the disk cache does); nullptr otherwise (the tiered JIT's test).
  std::shared_ptr<const PreparedKernel> prepare_if_built(const Schedule& schedule, const Target& target,
                                                         const ShapeKey& shape);

  /// The kernel's module loaded into the calling thread's current context
  /// (each entry's max dynamic SMEM set from the plan).
  const runtime::LoadedModule& module_for(const PreparedKernel& kernel);

  cache::DiskCache& disk_cache() { return *m_cache; }

  /// What keys name as the compiler of a backend's kernels: NVRTC, or the
  /// nvJitLink that assembles tier-0 PTX (loads it).
  NvrtcIdentity compiler_identity(Backend backend);
  /// NVRTC version string used in keys ("13.0"); loads NVRTC.
  const std::string& nvrtc_version();
  /// The NVRTC version and library build used in keys; loads NVRTC.
  NvrtcIdentity nvrtc_identity();
  /// What a current entry's key fields say (gc's orphans are the others);
  /// the NVRTC field is empty when NVRTC cannot be loaded here.
  cache::CurrentIdentity current_identity();

private:
  /// The kernel with these key fields from the first bundle holding it (the
  /// NVRTC field is each bundle's own), or nullptr. An entry whose cubin
  /// fails its SHA-256 is skipped with a warning and the lookup goes on (to
  /// later bundles, the disk cache, NVRTC).
  std::shared_ptr<const cache::CacheEntry> from_bundles(cache::CacheKeyFields fields);
  /// After this registry's first compile: cache::collect_over_cap once.
  void collect_once();
  enum class OnMiss { build, give_up };
  std::shared_ptr<const PreparedKernel> prepare_kernel(const Schedule& schedule, const Target& target,
                                                       const ShapeKey& shape, OnMiss on_miss);


  /// prepare()'s memo key: the schedule (name and object), the target and
  /// the shape key's fields. Compared as a tuple, no text built per call.
  struct PreparedSlot {
    std::string schedule_name;
    const Schedule* schedule = nullptr;
    std::string target;
    ShapeKey shape;
  };
  /// module_for()'s key: the context and the kernel's cache key (hex).
  struct ModuleSlot {
    void* context = nullptr;
    std::string key_hex;
  };
  /// Orders slots and their non-owning views alike (heterogeneous lookup:
  /// the dispatch path looks up without copying a string).
  struct SlotLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return tie(a) < tie(b);
    }
    /// prepare()'s key as compared: the one definition for slots and lookups.
    static auto prepared_view(std::string_view schedule_name, const Schedule* schedule, std::string_view target,
                              const ShapeKey& shape) {
      return std::make_tuple(schedule_name, schedule, target, shape.head_dim, shape.input_dtype, shape.state_dtype,
                             shape.layout, shape.checkpoints);
    }
    static auto tie(const PreparedSlot& s) { return prepared_view(s.schedule_name, s.schedule, s.target, s.shape); }
    static auto tie(const ModuleSlot& s) { return std::make_tuple(s.context, std::string_view(s.key_hex)); }
    template <class T>
    static auto tie(const T& view) {
      return view;
    }
  };

  std::mutex m_mutex;
  std::unique_ptr<cache::DiskCache> m_cache;
  std::map<PreparedSlot, std::shared_ptr<const PreparedKernel>, SlotLess> m_prepared;
  std::map<ModuleSlot, std::unique_ptr<runtime::LoadedModule>, SlotLess> m_modules;
  std::string m_nvrtc_version;
  std::string m_nvrtc_build;
  std::vector<std::shared_ptr<const cache::Bundle>> m_bundles;
  bool m_jit_enabled = true;
  std::size_t m_bundle_hits = 0;
  std::ostream* m_warnings = nullptr; ///< nullptr: std::cerr
  bool m_collected = false;
};

} // namespace kda
