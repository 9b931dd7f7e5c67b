#include "runtime/loaded_module.hpp"

#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"

#include <fmt/format.h>

#include <chrono>

#include <utility>

namespace kda::runtime {
namespace {

FunctionAttributes read_attributes(const LoadedFunction& f) {
  const DriverApi& api = driver_api();
  const auto read = [&](CUfunction_attribute which, const char* what) {
    int value = 0;
    check_cu(api.cuFuncGetAttribute(&value, which, f.function), "cuFuncGetAttribute",
             fmt::format("reading {} of '{}'", what, f.name));
    return value;
  };
  FunctionAttributes a;
  a.num_regs = read(CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS");
  a.shared_size_bytes = read(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES");
  a.local_size_bytes = read(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES");
  a.max_threads_per_block = read(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  a.binary_version = read(CU_FUNC_ATTRIBUTE_BINARY_VERSION, "BINARY_VERSION");
  a.max_dynamic_shared_size_bytes =
      read(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "MAX_DYNAMIC_SHARED_SIZE_BYTES");
  return a;
}

} // namespace

LoadedModule LoadedModule::load(const std::vector<std::uint8_t>& cubin, const std::vector<std::string>& entry_names,
                                int max_dynamic_smem_bytes) {
  KDA_INTERNAL_ASSERT(!cubin.empty(), "LoadedModule::load needs a cubin");
  LoadedModule out;
  out.m_context = ensure_current_context();
  const auto start = std::chrono::steady_clock::now();
  check_cu(driver_api().cuModuleLoadData(&out.m_module, cubin.data()), "cuModuleLoadData",
           fmt::format("loading a {}-byte cubin", cubin.size()));
  for (const std::string& name : entry_names) {
    LoadedFunction f;
    f.name = name;
    check_cu(driver_api().cuModuleGetFunction(&f.function, out.m_module, name.c_str()), "cuModuleGetFunction",
             fmt::format("looking up entry point '{}'", name));
    f.attributes = read_attributes(f);
    out.m_functions.push_back(std::move(f));
  }
  if (max_dynamic_smem_bytes > 0) {
    for (const std::string& name : entry_names) {
      out.set_max_dynamic_smem(name, max_dynamic_smem_bytes);
    }
  }
  out.m_load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

LoadedModule::LoadedModule(LoadedModule&& other) noexcept
    : m_module(std::exchange(other.m_module, nullptr)), m_context(std::exchange(other.m_context, nullptr)),
      m_functions(std::move(other.m_functions)), m_load_ms(other.m_load_ms) {}

LoadedModule& LoadedModule::operator=(LoadedModule&& other) noexcept {
  if (this != &other) {
    unload();
    m_module = std::exchange(other.m_module, nullptr);
    m_context = std::exchange(other.m_context, nullptr);
    m_functions = std::move(other.m_functions);
    m_load_ms = other.m_load_ms;
  }
  return *this;
}

LoadedModule::~LoadedModule() {
  unload();
}

void LoadedModule::unload() noexcept {
  if (m_module == nullptr || !driver_status().available) {
    return;
  }
  // Unload in the module's own context, then put the caller's back.
  const DriverApi& api = driver_api();
  CUcontext previous = nullptr;
  const bool switch_context = api.cuCtxGetCurrent(&previous) == CUDA_SUCCESS && previous != m_context;
  if (switch_context) {
    api.cuCtxSetCurrent(m_context);
  }
  api.cuModuleUnload(m_module);
  if (switch_context) {
    api.cuCtxSetCurrent(previous);
  }
  m_module = nullptr;
  m_functions.clear();
}

const LoadedFunction& LoadedModule::function(std::string_view name) const {
  return m_functions[index_of(name)];
}

std::size_t LoadedModule::index_of(std::string_view name) const {
  for (std::size_t i = 0; i < m_functions.size(); ++i) {
    if (m_functions[i].name == name) {
      return i;
    }
  }
  internal_assert_failed("function was passed to load()", __FILE__, __LINE__,
                         fmt::format("entry point '{}' was not loaded", name));
}

void LoadedModule::set_max_dynamic_smem(std::string_view name, int bytes) {
  LoadedFunction& f = m_functions[index_of(name)];
  check_cu(driver_api().cuFuncSetAttribute(f.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
           "cuFuncSetAttribute", fmt::format("setting max dynamic SMEM of '{}' to {} B", name, bytes));
  f.attributes = read_attributes(f);
}

void launch(CUfunction function, Dim3 grid, Dim3 block, unsigned dynamic_smem_bytes, CUstream stream, void** args,
            const LaunchAttributes& attributes) {
  if (attributes.order == StreamOrder::serialized && !attributes.priority) {
    KDA_CU(cuLaunchKernel, function, grid.x, grid.y, grid.z, block.x, block.y, block.z, dynamic_smem_bytes, stream,
           args, nullptr);
    return;
  }
  CUlaunchAttribute attribute[2] = {};
  unsigned count = 0;
  if (attributes.order == StreamOrder::programmatic) {
    attribute[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute[count].value.programmaticStreamSerializationAllowed = 1;
    ++count;
  }
  if (attributes.priority) {
    attribute[count].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attribute[count].value.priority = *attributes.priority;
    ++count;
  }
  CUlaunchConfig config{};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = dynamic_smem_bytes;
  config.hStream = stream;
  config.attrs = attribute;
  config.numAttrs = count;
  KDA_CU(cuLaunchKernelEx, &config, function, args, nullptr);
}

} // namespace kda::runtime
