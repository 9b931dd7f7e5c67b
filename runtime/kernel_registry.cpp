#include "runtime/kernel_registry.hpp"

#include "cache/cache_config.hpp"
#include "cache/sha256.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/context.hpp"
#include "runtime/generator_identity.hpp"
#include "runtime/nvrtc_compiler.hpp"

#include <fmt/format.h>

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

cache::BuiltEntry build_kernel(const KernelPlan& plan, const std::vector<std::string>& options) {
  const CudaSource source = emit_cuda(plan);
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

} // namespace

KernelRegistry::KernelRegistry()
    : m_cache(std::make_unique<cache::DiskCache>(cache::CacheConfig::from_environment())) {}

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry k_registry;
  return k_registry;
}

const std::string& KernelRegistry::nvrtc_version() {
  std::lock_guard lock(m_mutex);
  if (m_nvrtc_version.empty()) {
    const runtime::NvrtcVersion v = runtime::NvrtcCompiler().version();
    m_nvrtc_version = fmt::format("{}.{}", v.major, v.minor);
  }
  return m_nvrtc_version;
}

cache::CurrentIdentity KernelRegistry::current_identity() {
  cache::CurrentIdentity id;
  id.layout_version = k_cache_layout_version;
  id.abi_version = std::to_string(ArgAbi{}.version);
  id.generator_id = generator_id();
  try {
    id.nvrtc_version = nvrtc_version();
  } catch (const ToolchainError&) {
    // no NVRTC here: entries are not judged by their NVRTC version
  }
  return id;
}

std::shared_ptr<const PreparedKernel> KernelRegistry::prepare(const Schedule& schedule, const Target& target,
                                                              const ShapeKey& shape) {
  const std::string memo = fmt::format("{}|{}|{}|{}", schedule.name, static_cast<const void*>(&schedule), target.name,
                                       shape.canonical());
  {
    std::lock_guard lock(m_mutex);
    auto it = m_prepared.find(memo);
    if (it != m_prepared.end()) {
      return it->second;
    }
  }
  KernelPlan plan = lower(validate(schedule, target), shape);
  const std::vector<std::string> options = runtime::default_compile_options(target);
  const cache::CacheKey key =
      cache::make_cache_key(kernel_key_fields(schedule, target, shape, nvrtc_version(), options, plan.abi.version));
  cache::CacheEntryPtr entry = m_cache->get_or_build(key, [&] { return build_kernel(plan, options); });
  auto prepared = std::make_shared<const PreparedKernel>(PreparedKernel{std::move(plan), key, std::move(entry)});
  std::lock_guard lock(m_mutex);
  return m_prepared.emplace(memo, prepared).first->second;
}

const runtime::LoadedModule& KernelRegistry::module_for(const PreparedKernel& kernel) {
  CUcontext context = runtime::ensure_current_context();
  std::lock_guard lock(m_mutex);
  auto slot = std::make_pair(static_cast<void*>(context), kernel.key.hex());
  auto it = m_modules.find(slot);
  if (it != m_modules.end()) {
    return *it->second;
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
  return *m_modules.emplace(slot, std::move(module)).first->second;
}

} // namespace kda
