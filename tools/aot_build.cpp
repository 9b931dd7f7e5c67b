// kdajit aot build --plan PLAN.json --out DIR [--jobs N] [--json]
// Compiles a plan (schedules x targets x shape keys) in parallel, with a
// progress line per kernel, and writes into DIR:
//   kdajit.kdab              the bundle (cache/bundle.hpp): every kernel
//   fatbin/<schedule>.<shape>.fatbin
//                            one standard fatbin per kernel module, a cubin per
//                            target, made with the toolkit's fatbinary tool
// Plan: {"schedules": "all" | [name or file, ...], "targets": "listed" | [T, ...],
//        "shapes": [{"state": "bf16"|"fp32", "layout": "fixed"|"packed"}, ...]}
// ("all": every shipped schedule with a code generator; "listed": each
// schedule's own targets; a target list is intersected with them).
#include "cache/bundle.hpp"
#include "compiler/json_reader.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/read_file.hpp"
#include "compiler/schedule_library.hpp"
#include "runtime/kernel_registry.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/number_options.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/schedule_inputs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

#ifndef KDAJIT_FATBINARY
#define KDAJIT_FATBINARY "fatbinary"
#endif

extern char** environ;

namespace kda::tools {
namespace {

struct Job {
  Schedule schedule;
  Target target;
  ShapeKey shape;
};

struct Done {
  std::shared_ptr<const PreparedKernel> kernel;
  std::string error;
  double ms = 0.0;
};

// A plan's list field: the word `all_word` or an array of strings.
std::optional<std::vector<std::string>> word_or_names(const nlohmann::json& plan, const char* key,
                                                      const char* all_word, const char* what) {
  const nlohmann::json& value = plan.at(key);
  if (value.is_string() && value.get<std::string>() == all_word) {
    return std::nullopt;
  }
  const bool names = value.is_array() && std::all_of(value.begin(), value.end(), [](const nlohmann::json& v) {
    return v.is_string();
  });
  if (!names) {
    throw ContentError(fmt::format("plan: \"{}\" is \"{}\" or an array of {}, not {}", key, all_word, what,
                                   value.dump(-1, ' ', false, k_replace_invalid_utf8)));
  }
  return value.get<std::vector<std::string>>();
}

ShapeKey plan_shape(const nlohmann::json& shape_json) {
  auto word = [&](const char* key, const char* fallback) -> std::optional<std::string> {
    if (!shape_json.contains(key)) {
      return fallback;
    }
    const nlohmann::json& v = shape_json.at(key);
    return v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
  };
  const std::optional<std::string> state = word("state", "bf16");
  const std::optional<std::string> layout = word("layout", "fixed");
  const nlohmann::json checkpoints = shape_json.is_object() ? shape_json.value("checkpoints", nlohmann::json(false))
                                                            : nlohmann::json();
  const bool known_keys = shape_json.is_object() && std::all_of(shape_json.items().begin(), shape_json.items().end(),
                                                                [](const auto& item) {
                                                                  return item.key() == "state" ||
                                                                         item.key() == "layout" ||
                                                                         item.key() == "checkpoints";
                                                                });
  if (!known_keys || !state || !layout || (*state != "bf16" && *state != "fp32") ||
      (*layout != "fixed" && *layout != "packed") || !checkpoints.is_boolean()) {
    throw ContentError(fmt::format("plan: a shape is {{\"state\": bf16|fp32, \"layout\": fixed|packed, "
                                   "\"checkpoints\": true|false}}, not {}",
                                   shape_json.dump(-1, ' ', false, k_replace_invalid_utf8)));
  }
  ShapeKey shape;
  shape.checkpoints = checkpoints.get<bool>();
  shape.state_dtype = *state == "fp32" ? StatePrecision::fp32 : StatePrecision::bf16;
  shape.layout = *layout == "packed" ? LayoutKind::packed : LayoutKind::fixed;
  return shape;
}

std::vector<Job> plan_jobs(const nlohmann::json& plan) {
  for (const auto& item : plan.items()) {
    if (item.key() != "schedules" && item.key() != "targets" && item.key() != "shapes" && item.key() != "comment") {
      throw ContentError("plan: unknown key '" + item.key() + "' (a plan has schedules, targets, shapes and comment)");
    }
  }
  std::vector<Schedule> schedules;
  if (const auto names = word_or_names(plan, "schedules", "all", "schedule names or files")) {
    for (const std::string& n : *names) {
      schedules.push_back(schedule_by_name_or_file(n));
    }
  } else {
    for (const Schedule& s : shipped_schedules()) {
      if (s.backend != Backend::cuda) {
        continue; // the LLVM tier's kernels build in milliseconds at run time; bundles hold NVRTC's
      }
      try {
        find_family_recipe(s);
        schedules.push_back(s);
      } catch (const ScheduleError&) {
        // no code generator yet
      }
    }
  }
  const std::optional<std::vector<std::string>> wanted = word_or_names(plan, "targets", "listed", "target names");
  for (const std::string& t : wanted.value_or(std::vector<std::string>{})) {
    if (!find_target(t)) {
      throw ContentError(fmt::format("plan: unknown target '{}' (targets: {})", t, known_target_names()));
    }
  }
  const nlohmann::json& shapes_json = plan.at("shapes");
  if (!shapes_json.is_array() || shapes_json.empty()) {
    throw ContentError("plan: \"shapes\" is a non-empty array of shapes");
  }
  std::vector<ShapeKey> shapes;
  for (const nlohmann::json& shape_json : shapes_json) {
    shapes.push_back(plan_shape(shape_json));
  }
  std::vector<Job> jobs;
  for (const Schedule& s : schedules) {
    for (const std::string& t : s.targets) {
      if (wanted && std::find(wanted->begin(), wanted->end(), t) == wanted->end()) {
        continue;
      }
      const std::optional<Target> target = find_target(t);
      if (!target) {
        throw ContentError(fmt::format("schedule {} lists an unknown target '{}'", s.name, t));
      }
      for (const ShapeKey& shape : shapes) {
        jobs.push_back({s, *target, shape});
      }
    }
  }
  if (jobs.empty()) {
    throw ContentError("plan: selects no kernel (none of its schedules lists one of its targets)");
  }
  return jobs;
}

// Runs a program with these arguments (no shell) and waits; its exit status.
int run_program(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, args.data(), environ) != 0) {
    return -1;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void write_bytes(const std::filesystem::path& path, const cache::Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw CacheError("cannot write " + path.string());
  }
}

} // namespace

int aot_build_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--json"}, {"--plan", "--out", "--jobs"});
  if (!parsed.positional.empty() || !parsed.option("--plan") || !parsed.option("--out")) {
    throw UsageError("'aot build' needs --plan PLAN.json and --out DIR");
  }
  const FileText file = read_regular_file(*parsed.option("--plan"));
  if (!file.problem.empty()) {
    throw InputError("cannot read the plan " + *parsed.option("--plan") + ": " + file.problem);
  }
  std::string error;
  const std::optional<nlohmann::json> parsed_plan = parse_json_bounded(file.text, error);
  if (!parsed_plan) {
    throw ContentError("the plan " + *parsed.option("--plan") + " is not valid JSON: " + error);
  }
  const nlohmann::json& plan = *parsed_plan;
  if (!plan.is_object() || !plan.contains("schedules") || !plan.contains("targets") || !plan.contains("shapes")) {
    throw ContentError("the plan must be a JSON object with schedules, targets and shapes");
  }
  const std::vector<Job> jobs = plan_jobs(plan);
  const int workers = static_cast<int>(
      integer_option(parsed, "--jobs", std::max(1u, std::thread::hardware_concurrency()), 1, 1024));
  const bool json = parsed.has("--json");
  // Compile in parallel (the registry is thread-safe; cached entries are reused).
  std::vector<Done> done(jobs.size());
  std::atomic<std::size_t> next{0};
  std::mutex print;
  std::size_t finished = 0;
  auto work = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      const auto start = std::chrono::steady_clock::now();
      try {
        done[i].kernel = KernelRegistry::instance().prepare(jobs[i].schedule, jobs[i].target, jobs[i].shape);
      } catch (const Error& e) {
        done[i].error = e.what();
      }
      done[i].ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard lock(print);
      ++finished;
      if (!json) {
        out << fmt::format("[{}/{}] {} {} {}: {}\n", finished, jobs.size(), jobs[i].schedule.name,
                           jobs[i].target.name, jobs[i].shape.canonical(),
                           done[i].error.empty() ? fmt::format("{:.0f} ms", done[i].ms) : "FAILED: " + done[i].error);
        out.flush();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < std::min<int>(workers, static_cast<int>(jobs.size())); ++w) {
    pool.emplace_back(work);
  }
  for (std::thread& t : pool) {
    t.join();
  }
  // The bundle.
  const std::filesystem::path dir = *parsed.option("--out");
  std::filesystem::create_directories(dir / "fatbin");
  std::vector<cache::BundleInput> inputs;
  std::vector<std::string> failed;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!done[i].error.empty()) {
      failed.push_back(fmt::format("{} {} {}: {}", jobs[i].schedule.name, jobs[i].target.name,
                                   jobs[i].shape.canonical(), done[i].error));
      continue;
    }
    const cache::Manifest& m = done[i].kernel->entry->manifest;
    inputs.push_back({m.key_fields, m.entry_points, m.launch, done[i].kernel->entry->cubin});
  }
  const cache::CurrentIdentity id = KernelRegistry::instance().current_identity();
  const std::filesystem::path bundle_path = dir / "kdajit.kdab";
  write_bytes(bundle_path, cache::encode_bundle({id.generator_id, id.abi_version, id.layout_version, id.nvrtc_version, id.nvrtc_build},
                                                inputs));
  // One fatbin per module (schedule, shape key): a cubin per target.
  std::map<std::string, std::vector<std::size_t>> modules;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (done[i].error.empty()) {
      modules[jobs[i].schedule.name + "." + jobs[i].shape.canonical()].push_back(i);
    }
  }
  std::vector<std::string> fatbins;
  std::string fatbin_problem;
  if (!std::filesystem::exists(KDAJIT_FATBINARY)) {
    fatbin_problem = fmt::format("no fatbinary tool at {}: fatbins not written", KDAJIT_FATBINARY);
  }
  const std::filesystem::path scratch = dir / "fatbin" / ".cubins";
  for (const auto& [name, indices] : modules) {
    if (!fatbin_problem.empty()) {
      break;
    }
    std::filesystem::create_directories(scratch);
    std::vector<std::string> command = {KDAJIT_FATBINARY,
                                        "--create=" + (dir / "fatbin" / (name + ".fatbin")).string()};
    for (std::size_t i : indices) {
      const std::filesystem::path cubin = scratch / (done[i].kernel->key.hex() + ".cubin");
      write_bytes(cubin, done[i].kernel->entry->cubin);
      command.push_back(fmt::format("--image3=kind=elf,sm={},file={}", jobs[i].target.name.substr(3), cubin.string()));
    }
    if (run_program(command) != 0) {
      fatbin_problem = fmt::format("fatbinary failed: {}", fmt::join(command, " "));
      break;
    }
    fatbins.push_back((dir / "fatbin" / (name + ".fatbin")).string());
  }
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
  if (json) {
    out << nlohmann::json{{"bundle", bundle_path.string()},
                          {"entries", inputs.size()},
                          {"fatbins", fatbins},
                          {"fatbin_problem", fatbin_problem},
                          {"failed", failed}}
                .dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  } else {
    out << fmt::format("wrote {} ({} kernels) and {} fatbins in {}\n", bundle_path.string(), inputs.size(),
                       fatbins.size(), (dir / "fatbin").string());
  }
  if (!fatbin_problem.empty()) {
    err << "kdajit aot build: " << fatbin_problem << "\n";
  }
  if (!failed.empty()) {
    for (const std::string& f : failed) {
      err << "kdajit aot build: " << f << "\n";
    }
    return k_exit_toolchain;
  }
  return fatbin_problem.empty() ? k_exit_ok : k_exit_toolchain;
}

} // namespace kda::tools
