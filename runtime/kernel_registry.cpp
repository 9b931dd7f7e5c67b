#include "runtime/kernel_registry.hpp"

#include "cache/cache_config.hpp"
#include "cache/sha256.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/environment.hpp"
#include "runtime/generator_identity.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/nvrtc_library.hpp"
#include "runtime/tier0_build.hpp"
#include "runtime/tier0_codegen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace kda {
namespace {

nlohmann::json resources_json(const runtime::ResourceUsage& r) {
  return {{"registers", r.registers},
          {"static_smem_bytes", r.static_smem_bytes},
          {"stack_frame_bytes", r.stack_frame_bytes},
          {"spill_store_bytes", r.spill_store_bytes},
          {"spill_load_bytes", r.spill_load_bytes},
          {"wgmma_serialized", r.wgmma_serialized},
          {"wgmma_wait_injected", r.wgmma_wait_injected}};
}

nlohmann::json launch_json(const KernelPlan& plan) {
  nlohmann::json entries = nlohmann::json::array();
  for (const EntryPlan& e : plan.entries) {
    entries.push_back({{"entry", e.entry_name}, {"threads", e.launch.threads}, {"dynamic_smem", e.launch.dynamic_smem}});
  }
  return {{"schedule", plan.schedule_name}, {"entries", entries}, {"workspace_record_bytes", plan.workspace.record_bytes}};
}

cache::BuiltEntry build_kernel(const KernelPlan& plan, const CudaSource& source,
                               const std::vector<std::string>& options) {
  runtime::CompileRequest request;
  request.source = source.text;
  request.label = source.file_name;
  request.target = plan.target;
  request.entry_points = source.entry_points;
  (void)options; // the compiler derives the same default options for the target
  const runtime::CompiledModule compiled = runtime::NvrtcCompiler().compile(request);
  cache::BuiltEntry built;
  built.cubin = compiled.cubin;
  built.source = source.text;
  built.log = compiled.log;
  built.manifest.compile_ms = compiled.compile_ms;
  built.manifest.producer = cache::Producer::jit;
  built.manifest.launch = launch_json(plan);
  for (const std::string& name : source.entry_points) {
    cache::EntryPoint ep;
    ep.name = name;
    auto it = compiled.resources.find(name);
    if (it != compiled.resources.end()) {
      ep.resources = resources_json(it->second);
    }
    built.manifest.entry_points.push_back(ep);
  }
  return built;
}

// A tier-0 kernel: the cache stores its IR as the entry's source (`kdajit
// repro` rebuilds from it), nvJitLink's log, and the build's three steps.
cache::BuiltEntry build_tier0_kernel(const KernelPlan& plan, const std::string& ir_text) {
  const runtime::Tier0Build b = runtime::build_tier0(plan);
  cache::BuiltEntry built;
  built.cubin = b.cubin;
  built.source = ir_text;
  built.log = b.log;
  built.manifest.compile_ms = b.ir_ms + b.ptx_ms + b.cubin_ms;
  built.manifest.producer = cache::Producer::jit;
  built.manifest.launch = launch_json(plan);
  built.manifest.launch["tier0_ms"] = {{"ir", b.ir_ms}, {"ptx", b.ptx_ms}, {"cubin", b.cubin_ms}};
  cache::EntryPoint ep;
  ep.name = plan.token->entry_name;
  ep.resources = resources_json(b.resources);
  built.manifest.entry_points.push_back(ep);
  return built;
}

// What a plan's kernel is made from and by: the emitted code (its SHA-256 is
// a key field), the compile options and the compiler's identity.
struct KernelSource {
  std::string text;
  std::vector<std::string> options;
  CudaSource cuda; ///< the CUDA backend's
};

KernelSource kernel_source(const KernelPlan& plan) {
  KernelSource out;
  if (plan.backend == Backend::llvm) {
    out.text = runtime::tier0_ir(plan).text;
    // the key names the backend and the LLVM release that wrote the PTX
    out.options = {"backend=llvm", "llvm=" + runtime::tier0_llvm_version()};
    return out;
  }
  out.options = runtime::default_compile_options(plan.target);
  out.cuda = emit_cuda(plan);
  out.text = out.cuda.text;
  return out;
}

} // namespace

KernelRegistry::KernelRegistry(cache::CacheConfig config)
    : m_cache(std::make_unique<cache::DiskCache>(std::move(config))) {}

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry& k_registry = *[] {
    auto* r = new KernelRegistry(cache::CacheConfig::from_environment());
    // KDAJIT_BUNDLE_PATH: bundle files, or directories of *.kdab, separated by ':'
    if (const char* paths = std::getenv("KDAJIT_BUNDLE_PATH"); paths != nullptr) {
      std::stringstream list(paths);
      for (std::string item; std::getline(list, item, ':');) {
        std::vector<std::string> files;
        std::error_code error;
        if (std::filesystem::is_directory(item, error)) {
          // the directory's regular *.kdab files (a directory named x.kdab is no bundle)
          for (auto it = std::filesystem::directory_iterator(item, error);
               !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
            if (it->path().extension() == ".kdab" && it->is_regular_file(error)) {
              files.push_back(it->path().string());
            }
          }
          if (error) {
            std::cerr << "kdajit: warning: KDAJIT_BUNDLE_PATH: cannot list " << item << ": " << error.message()
                      << " (skipped)\n";
            files.clear();
          }
          std::sort(files.begin(), files.end());
        } else if (!item.empty()) {
          files.push_back(item);
        }
        for (const std::string& f : files) {
          try {
            r->register_bundle(f, &std::cerr);
          } catch (const CacheError& e) {
            std::cerr << "kdajit: warning: KDAJIT_BUNDLE_PATH: " << e.what() << " (skipped)\n";
          }
        }
      }
    }
    if (runtime::jit_disabled_by_environment()) {
      r->set_jit_enabled(false);
    }
    return r;
  }();
  return k_registry;
}

std::size_t KernelRegistry::register_bundle(const std::string& path, std::ostream* warnings) {
  auto bundle = std::make_shared<const cache::Bundle>(cache::Bundle::read(path));
  const cache::CurrentIdentity now = current_identity();
  const cache::BundleIdentity& id = bundle->identity();
  if (id.generator_id != now.generator_id || id.abi_version != now.abi_version ||
      id.layout_version != now.layout_version) {
    if (warnings != nullptr) {
      *warnings << fmt::format("kdajit: warning: bundle {}: {} entr{} built by generator {} (ABI {}, layout {}); this "
                               "is {} (ABI {}, layout {}): skipped\n",
                               path, bundle->entries().size(), bundle->entries().size() == 1 ? "y" : "ies",
                               id.generator_id, id.abi_version, id.layout_version,
                               now.generator_id, now.abi_version, now.layout_version);
    }
    return 0;
  }
  if (!runtime::driver_loads_nvrtc_output(id.nvrtc_version)) {
    if (warnings != nullptr) {
      *warnings << fmt::format("kdajit: warning: bundle {}: {} entr{} built by NVRTC {}, whose cubins the CUDA {} "
                               "driver cannot load: skipped\n",
                               path, bundle->entries().size(), bundle->entries().size() == 1 ? "y" : "ies",
                               id.nvrtc_version, runtime::driver_status().driver_version / 1000);
    }
    return 0;
  }
  std::lock_guard lock(m_mutex);
  m_bundles.push_back(bundle);
  return bundle->entries().size();
}

void KernelRegistry::collect_once() {
  {
    std::lock_guard lock(m_mutex);
    if (m_collected) {
      return;
    }
    m_collected = true;
  }
  const cache::CacheConfig& config = m_cache->config();
  if (!config.root) {
    return;
  }
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  try {
    cache::collect_over_cap(*config.root, config.lock_dir, current_identity(), cache::max_bytes_from_environment(), now);
  } catch (const std::exception&) {
    // collection is best effort: a failure never fails the call that compiled
  }
}

std::vector<std::pair<std::string, std::size_t>> KernelRegistry::bundles() {
  std::lock_guard lock(m_mutex);
  std::vector<std::pair<std::string, std::size_t>> out;
  for (const auto& b : m_bundles) {
    out.emplace_back(b->source(), b->entries().size());
  }
  return out;
}

bool KernelRegistry::jit_enabled() {
  std::lock_guard lock(m_mutex);
  return m_jit_enabled;
}

void KernelRegistry::set_warning_stream(std::ostream* warnings) {
  std::lock_guard lock(m_mutex);
  m_warnings = warnings;
}

void KernelRegistry::set_jit_enabled(bool enabled) {
  std::lock_guard lock(m_mutex);
  m_jit_enabled = enabled;
}

std::shared_ptr<const cache::CacheEntry> KernelRegistry::from_bundles(cache::CacheKeyFields fields) {
  std::vector<std::shared_ptr<const cache::Bundle>> bundles;
  {
    std::lock_guard lock(m_mutex);
    bundles = m_bundles;
  }
  for (const auto& b : bundles) {
    // A bundle's cubins are valid whatever NVRTC this process has (or none):
    // its entries are looked up with the NVRTC version that built them.
    fields.nvrtc_version = b->identity().nvrtc_version;
    fields.nvrtc_build = b->identity().nvrtc_build;
    if (const cache::BundleEntry* e = b->find(cache::make_cache_key(fields).hex())) {
      auto entry = std::make_shared<cache::CacheEntry>();
      entry->manifest = e->manifest;
      try {
        entry->cubin = b->cubin(*e); // SHA-256 checked
      } catch (const CacheError& error) {
        std::lock_guard lock(m_mutex);
        *(m_warnings != nullptr ? m_warnings : &std::cerr)
            << fmt::format("kdajit: warning: {} (entry skipped: the lookup goes on)\n", error.what());
        continue;
      }
      std::lock_guard lock(m_mutex);
      ++m_bundle_hits;
      return entry;
    }
  }
  return nullptr;
}

const std::string& KernelRegistry::nvrtc_version() {
  std::lock_guard lock(m_mutex);
  if (m_nvrtc_version.empty()) {
    const runtime::NvrtcVersion v = runtime::NvrtcCompiler().version();
    m_nvrtc_version = fmt::format("{}.{}", v.major, v.minor);
    m_nvrtc_build = runtime::NvrtcLibrary::get().build();
  }
  return m_nvrtc_version;
}

NvrtcIdentity KernelRegistry::nvrtc_identity() {
  const std::string version = nvrtc_version();
  std::lock_guard lock(m_mutex);
  return {version, m_nvrtc_build};
}

NvrtcIdentity KernelRegistry::compiler_identity(Backend backend) {
  if (backend == Backend::cuda) {
    return nvrtc_identity();
  }
  const runtime::Tier0LinkerIdentity linker = runtime::tier0_linker_identity();
  return {linker.version, "nvJitLink " + linker.build};
}

cache::CurrentIdentity KernelRegistry::current_identity() {
  cache::CurrentIdentity id;
  id.layout_version = std::string(k_cache_layout_version);
  id.abi_version = std::to_string(ArgAbi{}.version);
  id.generator_id = generator_id();
  try {
    const NvrtcIdentity nvrtc = nvrtc_identity();
    id.nvrtc_version = nvrtc.version;
    id.nvrtc_build = nvrtc.build;
  } catch (const ToolchainError&) {
    // no NVRTC here: entries are not judged by their NVRTC version
  }
  return id;
}

std::shared_ptr<const PreparedKernel> KernelRegistry::prepare(const Schedule& schedule, const Target& target,
                                                              const ShapeKey& shape) {
  return prepare_kernel(schedule, target, shape, OnMiss::build);
}

std::shared_ptr<const PreparedKernel> KernelRegistry::prepare_if_built(const Schedule& schedule, const Target& target,
                                                                       const ShapeKey& shape) {
  return prepare_kernel(schedule, target, shape, OnMiss::give_up);
}

std::shared_ptr<const PreparedKernel> KernelRegistry::prepare_kernel(const Schedule& schedule, const Target& target,
                                                                     const ShapeKey& shape, OnMiss on_miss) {
  const auto memo_view = SlotLess::prepared_view(schedule.name, &schedule, target.name, shape);
  {
    std::lock_guard lock(m_mutex);
    auto it = m_prepared.find(memo_view);
    if (it != m_prepared.end()) {
      return it->second;
    }
  }
  KernelPlan plan = lower(validate(schedule, target), shape);
  // the key covers the emitted source (or tier-0 IR) itself (a few ms on a first call)
  const KernelSource source = kernel_source(plan);
  const std::vector<std::string>& options = source.options;
  const std::string source_sha256 = emitted_source_sha256(source.text);
  cache::CacheEntryPtr entry =
      from_bundles(kernel_key_fields(schedule, target, shape, {}, options, plan.abi.version, source_sha256));
  if (entry) {
    auto prepared = std::make_shared<const PreparedKernel>(
        PreparedKernel{std::move(plan), cache::make_cache_key(entry->manifest.key_fields), std::move(entry)});
    std::lock_guard lock(m_mutex);
    return m_prepared.emplace(PreparedSlot{schedule.name, &schedule, target.name, shape}, prepared).first->second;
  }
  // the disk cache and NVRTC: keyed by this process's NVRTC (ToolchainError
  // without one); tier-0 kernels by its nvJitLink
  const cache::CacheKey key = cache::make_cache_key(
      kernel_key_fields(schedule, target, shape, compiler_identity(plan.backend), options, plan.abi.version,
                        source_sha256));
  bool jit = true;
  {
    std::lock_guard lock(m_mutex);
    jit = m_jit_enabled;
  }
  if (on_miss == OnMiss::give_up) {
    cache::LookupResult found = m_cache->lookup(key);
    if (!found.hit()) {
      return nullptr;
    }
    entry = found.entry;
  }
  if (!entry && !jit) {
    cache::LookupResult found = m_cache->lookup(key);
    if (!found.hit()) {
      throw ToolchainError(fmt::format(
          "kernel {} ({} on {}, shape {}) is in no registered bundle and not in the kernel cache, and JIT is off "
          "(KDAJIT_DISABLE_JIT=1): build it with `kdajit compile --schedule {} --target {} --state {} --layout {}` "
          "or into a bundle with `kdajit aot build --plan PLAN --out DIR` (then KDAJIT_BUNDLE_PATH=DIR)",
          key.short_id(), schedule.name, target.name, shape.canonical(), schedule.name, target.name,
          to_string(shape.state_dtype), to_string(shape.layout)));
    }
    entry = found.entry;
  }
  if (!entry) {
    bool built = false;
    entry = m_cache->get_or_build(key, [&] {
      built = true;
      return plan.backend == Backend::llvm ? build_tier0_kernel(plan, source.text)
                                           : build_kernel(plan, source.cuda, options);
    });
    if (built) {
      collect_once();
    }
  }
  auto prepared = std::make_shared<const PreparedKernel>(PreparedKernel{std::move(plan), key, std::move(entry)});
  std::lock_guard lock(m_mutex);
  return m_prepared.emplace(PreparedSlot{schedule.name, &schedule, target.name, shape}, prepared).first->second;
}

const runtime::LoadedModule& KernelRegistry::module_for(const PreparedKernel& kernel) {
  CUcontext context = runtime::ensure_current_context();
  std::lock_guard lock(m_mutex);
  auto it = m_modules.find(std::make_tuple(static_cast<void*>(context), std::string_view(kernel.key.hex())));
  if (it != m_modules.end()) {
    return *it->second;
  }
  // (a tier-0 cubin's field holds the nvJitLink version that made it: judged the same way)
  if (const std::string& built_by = kernel.entry->manifest.key_fields.nvrtc_version;
      !runtime::driver_loads_nvrtc_output(built_by)) {
    throw ToolchainError(fmt::format("kernel {} was built by NVRTC {}, whose cubins the CUDA {} driver cannot load",
                                     kernel.key.short_id(), built_by, runtime::driver_status().driver_version / 1000));
  }
  std::vector<std::string> names;
  for (const EntryPlan& e : kernel.plan.entries) {
    names.push_back(e.entry_name);
  }
  auto module = std::make_unique<runtime::LoadedModule>(runtime::LoadedModule::load(kernel.entry->cubin, names));
  for (const EntryPlan& e : kernel.plan.entries) {
    if (e.launch.dynamic_smem > 48 * 1024) {
      module->set_max_dynamic_smem(e.entry_name, static_cast<int>(e.launch.dynamic_smem));
    }
  }
  return *m_modules.emplace(ModuleSlot{context, kernel.key.hex()}, std::move(module)).first->second;
}

} // namespace kda
