#include "runtime/nvrtc_compiler.hpp"

#include "runtime/cubin_symbols.hpp"
#include "runtime/entry_resources.hpp"

#include <set>

#include "compiler/errors.hpp"
#include "runtime/failed_source.hpp"
#include "runtime/nvrtc_library.hpp"

#include <fmt/format.h>

#include <chrono>

namespace kda::runtime {
namespace {

constexpr std::size_t k_error_lines_in_message = 8;

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

NvrtcVersion NvrtcCompiler::version() const {
  return NvrtcLibrary::get().version();
}

CompiledModule NvrtcCompiler::compile(const CompileRequest& request) const {
  KDA_INTERNAL_ASSERT(!request.target.name.empty(), "CompileRequest without a target");
  const NvrtcLibrary& library = NvrtcLibrary::get();
  const NvrtcApi& api = library.api();

  CompiledModule out;
  out.target_name = request.target.name;
  out.nvrtc_version = library.version();
  out.options = default_compile_options(request.target, request.standard);
  out.options.insert(out.options.end(), request.extra_options.begin(), request.extra_options.end());
  std::vector<const char*> option_pointers;
  option_pointers.reserve(out.options.size());
  for (const std::string& option : out.options) {
    option_pointers.push_back(option.c_str());
  }

  const auto start = std::chrono::steady_clock::now();
  Program program(library);
  if (const nvrtcResult r = api.nvrtcCreateProgram(program.out(), request.source.c_str(), request.label.c_str(), 0,
                                                   nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    fail(request, out.options, {}, fmt::format("nvrtcCreateProgram failed ({})", library.error_string(r)));
  }
  const nvrtcResult compiled =
      api.nvrtcCompileProgram(program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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
  out.cubin.resize(cubin_size);
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

  // Which kernels exist is read from the cubin's symbol table, not the log.
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
  // Registers, stack frame and static SMEM from the cubin, spills from the log.
  const std::map<std::string, ResourceUsage> logged = parse_ptxas_resource_log(out.log);
  const std::map<std::string, CubinResources> recorded = cubin_resources(out.cubin);
  for (const std::string& entry : request.entry_points) {
    const auto in_cubin = recorded.find(entry);
    const auto in_log = logged.find(entry);
    const std::variant<ResourceUsage, std::string> usage =
        entry_resources(entry, in_cubin != recorded.end() ? &in_cubin->second : nullptr,
                        in_log != logged.end() ? &in_log->second : nullptr);
    if (const std::string* why = std::get_if<std::string>(&usage)) {
      fail(request, out.options, out.log, *why);
    }
    out.resources[entry] = std::get<ResourceUsage>(usage);
  }
  return out;
}

} // namespace kda::runtime
