#include "runtime/nvrtc_compiler.hpp"

#include "runtime/cubin_symbols.hpp"
#include "runtime/entry_resources.hpp"

#include <set>

#include "compiler/errors.hpp"
#include "runtime/failed_source.hpp"
#include "runtime/nvrtc_library.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string_view>

namespace kda::runtime {
namespace {

constexpr std::size_t k_error_lines_in_message = 8;

// the smallest kernel that takes NVRTC through every stage (front end, NVVM, ptxas)
constexpr const char* k_process_state_kernel =
    "extern \"C\" __global__ void kdajit_nvrtc_process_state(float* p) { p[threadIdx.x] = 1.0f; }\n";

// set once an nvrtcCompileProgram call has returned in this process
std::atomic<bool> g_compile_returned{false};

/// Owns one nvrtcProgram; destroyed on every path out of compile().
class Program {
public:
  explicit Program(const NvrtcLibrary& library) : m_library(library) {}
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (m_program != nullptr) {
      m_library.api().nvrtcDestroyProgram(&m_program);
    }
  }
  nvrtcProgram* out() { return &m_program; }
  nvrtcProgram get() const { return m_program; }

private:
  const NvrtcLibrary& m_library;
  nvrtcProgram m_program = nullptr;
};

std::string program_log(const NvrtcLibrary& library, nvrtcProgram program) {
  std::size_t size = 0;
  if (library.api().nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) {
    return {};
  }
  std::string log(size, '\0');
  if (library.api().nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) {
    return {};
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) {
    log.pop_back();
  }
  return log;
}

/// The log lines that say what went wrong, for the exception message (the whole
/// log stays in ToolchainError::log()).
std::string error_lines(const std::string& log) {
  std::string out;
  std::size_t count = 0;
  std::size_t start = 0;
  while (start < log.size() && count < k_error_lines_in_message) {
    const std::size_t end = std::min(log.find('\n', start), log.size());
    const std::string_view line(log.data() + start, end - start);
    if (line.find("error") != std::string_view::npos || line.find("fatal") != std::string_view::npos) {
      out += fmt::format("\n  {}", line);
      ++count;
    }
    start = end + 1;
  }
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    out += out.empty() ? n : ", " + n;
  }
  return out.empty() ? std::string("none") : out;
}

[[noreturn]] void fail(const CompileRequest& request, const std::vector<std::string>& options, const std::string& log,
                       const std::string& what) {
  const std::filesystem::path dir = request.failure_dir.empty() ? default_failure_dir() : request.failure_dir;
  const FailedSource written = write_failed_source(dir, request.label, request.source, options, log);
  const std::string& path = written.path;
  const std::string where = path.empty() ? fmt::format("source not written ({})", written.problem)
                                         : fmt::format("source written to {}", path);
  throw ToolchainError(fmt::format("nvrtc: {} for {}: {}; {}{}", request.label.empty() ? "<unnamed>" : request.label,
                                   request.target.name, what, where, error_lines(log)),
                       log, options, path);
}

constexpr std::string_view k_cached_compile_note =
    "kdajit: note: this log has no ptxas lines (NVRTC served the compile from its own cache); registers, stack "
    "frame and static SMEM were read from the cubin, and no entry point has a stack frame to spill to";

/// One NVRTC run of `source` with `out.options`: sets out.log, out.cubin and
/// (on request) out.ptx; returns its milliseconds. Throws through fail().
double run_nvrtc(const NvrtcLibrary& library, const CompileRequest& request, const std::string& source,
                 CompiledModule& out) {
  const NvrtcApi& api = library.api();
  std::vector<const char*> option_pointers;
  option_pointers.reserve(out.options.size());
  for (const std::string& option : out.options) {
    option_pointers.push_back(option.c_str());
  }
  const auto start = std::chrono::steady_clock::now();
  Program program(library);
  if (const nvrtcResult r =
          api.nvrtcCreateProgram(program.out(), source.c_str(), request.label.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    fail(request, out.options, {}, fmt::format("nvrtcCreateProgram failed ({})", library.error_string(r)));
  }
  const nvrtcResult compiled =
      api.nvrtcCompileProgram(program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());
  g_compile_returned.store(true);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  out.log = program_log(library, program.get());
  if (compiled != NVRTC_SUCCESS) {
    fail(request, out.options, out.log, fmt::format("compile failed ({})", library.error_string(compiled)));
  }

  std::size_t cubin_size = 0;
  if (const nvrtcResult r = api.nvrtcGetCUBINSize(program.get(), &cubin_size); r != NVRTC_SUCCESS || cubin_size == 0) {
    fail(request, out.options, out.log,
         r != NVRTC_SUCCESS ? fmt::format("nvrtcGetCUBINSize failed ({})", library.error_string(r))
                            : std::string("no cubin produced (a compute_* arch gives PTX only)"));
  }
  out.cubin.assign(cubin_size, 0);
  if (const nvrtcResult r = api.nvrtcGetCUBIN(program.get(), reinterpret_cast<char*>(out.cubin.data()));
      r != NVRTC_SUCCESS) {
    fail(request, out.options, out.log, fmt::format("nvrtcGetCUBIN failed ({})", library.error_string(r)));
  }
  if (request.want_ptx) {
    std::size_t ptx_size = 0;
    std::string ptx;
    if (api.nvrtcGetPTXSize(program.get(), &ptx_size) == NVRTC_SUCCESS && ptx_size > 0) {
      ptx.resize(ptx_size);
      if (api.nvrtcGetPTX(program.get(), ptx.data()) != NVRTC_SUCCESS) {
        fail(request, out.options, out.log, "nvrtcGetPTX failed");
      }
      while (!ptx.empty() && ptx.back() == '\0') {
        ptx.pop_back();
      }
    }
    out.ptx = std::move(ptx);
  }
  return ms;
}

/// Which kernels exist is read from the cubin's symbol table, not the log.
void check_entry_points(const CompileRequest& request, const CompiledModule& out) {
  const std::set<std::string> functions = cubin_function_names(out.cubin);
  std::vector<std::string> missing;
  for (const std::string& entry : request.entry_points) {
    if (!functions.contains(entry)) {
      missing.push_back(entry);
    }
  }
  if (!missing.empty()) {
    const std::vector<std::string> compiled_entries(functions.begin(), functions.end());
    fail(request, out.options, out.log,
         fmt::format("entry point{} {} not in the cubin (its functions: {}; entries must be extern \"C\" __global__)",
                     missing.size() == 1 ? "" : "s", joined(missing), joined(compiled_entries)));
  }
}

/// Whether an entry point has a stack frame the log does not describe.
bool spills_unknown(const CompileRequest& request, const CompiledModule& out) {
  const std::map<std::string, ResourceUsage> logged = parse_ptxas_resource_log(out.log);
  const std::map<std::string, CubinResources> recorded = cubin_resources(out.cubin);
  for (const std::string& entry : request.entry_points) {
    const auto it = recorded.find(entry);
    if (it != recorded.end() && it->second.stack_frame_bytes > 0 && !logged.contains(entry)) {
      return true;
    }
  }
  return false;
}

/// An empty kernel no earlier compile has held.
std::string uncached_probe_kernel() {
  std::random_device random;
  const std::uint64_t nonce = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  return fmt::format("\nextern \"C\" __global__ void kdajit_ptxas_log_probe_{:016x}() {{}}\n", nonce);
}

} // namespace

std::vector<std::string> default_compile_options(const Target& target, CxxStandard standard) {
  return {
      "-arch=" + target.arch(),
      standard == CxxStandard::cxx20 ? "-std=c++20" : "-std=c++17",
      "--ptxas-options=-v", // one flag per --ptxas-options: "-v,--warn-on-spills" is rejected
      "-default-device",
  };
}


NvrtcCompiler::NvrtcCompiler() {
  NvrtcLibrary::get();
}

void NvrtcCompiler::create_process_state(const Target& target) const {
  if (g_compile_returned.load()) {
    return;
  }
  const NvrtcLibrary& library = NvrtcLibrary::get();
  const std::vector<std::string> options = default_compile_options(target);
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) {
    option_pointers.push_back(option.c_str());
  }
  Program program(library);
  if (library.api().nvrtcCreateProgram(program.out(), k_process_state_kernel, "kdajit_nvrtc_process_state.cu", 0,
                                       nullptr, nullptr) ==
      NVRTC_SUCCESS) {
    // the result does not matter: the objects NVRTC keeps exist once it returns
    (void)library.api().nvrtcCompileProgram(program.get(), static_cast<int>(option_pointers.size()),
                                            option_pointers.data());
    g_compile_returned.store(true);
  }
}

NvrtcVersion NvrtcCompiler::version() const {
  return NvrtcLibrary::get().version();
}

CompiledModule NvrtcCompiler::compile(const CompileRequest& request) const {
  KDA_INTERNAL_ASSERT(!request.target.name.empty(), "CompileRequest without a target");
  const NvrtcLibrary& library = NvrtcLibrary::get();

  CompiledModule out;
  out.target_name = request.target.name;
  out.nvrtc_version = library.version();
  out.options = default_compile_options(request.target, request.standard);
  out.options.insert(out.options.end(), request.extra_options.begin(), request.extra_options.end());

  out.compile_ms = run_nvrtc(library, request, request.source, out);
  check_entry_points(request, out);
  if (spills_unknown(request, out)) {
    // NVRTC (12.9 on) may answer a compile whose PTX it has seen from its own
    // cache (CUDA_CACHE_PATH, default ~/.nv/ComputeCache) with the same cubin
    // and no ptxas lines in the log. A kernel with a stack frame needs those
    // lines (its spills), so the source is compiled once more with an empty
    // kernel of a fresh name added, which makes PTX that cache has not seen;
    // ptxas reports each kernel alone, so that log describes this cubin's
    // kernels. The cubin kept is the one of the source as given.
    CompiledModule probe;
    probe.options = out.options;
    out.compile_ms += run_nvrtc(library, request, request.source + uncached_probe_kernel(), probe);
    out.log = std::move(probe.log);
  }
  // Registers, stack frame and static SMEM from the cubin, spills from the log.
  const std::map<std::string, ResourceUsage> logged = parse_ptxas_resource_log(out.log);
  const std::map<std::string, CubinResources> recorded = cubin_resources(out.cubin);
  for (const std::string& entry : request.entry_points) {
    const std::variant<ResourceUsage, std::string> usage = entry_resources(entry, recorded, logged);
    if (const std::string* why = std::get_if<std::string>(&usage)) {
      fail(request, out.options, out.log, *why);
    }
    out.resources[entry] = std::get<ResourceUsage>(usage);
  }
  if (logged.empty()) {
    out.log += fmt::format("{}{}", out.log.empty() ? "" : "\n", k_cached_compile_note);
  }
  return out;
}

} // namespace kda::runtime
