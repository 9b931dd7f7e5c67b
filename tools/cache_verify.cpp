// kdajit cache verify [--load] [--cache-dir DIR] [--json]: every entry's
// manifest, key and cubin checksum (cache/entry_io.hpp read_entry); with
// --load (GPU needed) also each cubin loaded into the current context, every
// entry point found and its register count equal to the manifest's. An entry
// of another generator or toolchain is reported as stale (the orphans of
// `cache gc --orphans`); where it was written by a kdajit build with another
// key encoding, its key cannot be recomputed here and only its cubin is
// checked. Exit 5 when one is bad, 7 for --load without a usable GPU.
#include "cache/entry_io.hpp"
#include "cache/eviction.hpp"
#include "cache/list_entries.hpp"
#include "compiler/target.hpp"
#include "runtime/context.hpp"
#include "runtime/device_info.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/loaded_module.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/cache_target.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>

#include <ostream>

namespace kda::tools {
namespace {

// Loads the cubin and compares each entry point's registers, stack frame and
// static SMEM with the manifest.
std::string loaded_problem(const cache::CacheEntry& entry) {
  std::vector<std::string> names;
  for (const cache::EntryPoint& ep : entry.manifest.entry_points) {
    names.push_back(ep.name);
  }
  try {
    const runtime::LoadedModule module = runtime::LoadedModule::load(entry.cubin, names);
    for (const cache::EntryPoint& ep : entry.manifest.entry_points) {
      const runtime::FunctionAttributes& loaded = module.function(ep.name).attributes;
      const struct {
        const char* field;
        const char* what;
        int value;
      } checks[] = {{"registers", "registers", loaded.num_regs},
                    {"stack_frame_bytes", "bytes of stack frame", loaded.local_size_bytes},
                    {"static_smem_bytes", "bytes of static SMEM", loaded.shared_size_bytes}};
      for (const auto& check : checks) {
        const int recorded = ep.resources.value(check.field, -1);
        if (recorded >= 0 && check.value != recorded) {
          return fmt::format("{} loads with {} {}, the manifest says {}", ep.name, check.value, check.what, recorded);
        }
      }
    }
  } catch (const Error& e) {
    return std::string("does not load: ") + e.what();
  }
  return {};
}

} // namespace

int cache_verify_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--json", "--load"}, {"--cache-dir"});
  if (!parsed.positional.empty()) {
    throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  }
  const bool load = parsed.has("--load");
  if (load && !runtime::driver_status().available) {
    err << "kdajit cache verify --load: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  runtime::DeviceInfo device;
  if (load) {
    runtime::ensure_current_context();
    device = runtime::current_device_info();
  }
  std::vector<std::string> skipped; // --load: entries for another compute capability
  const CacheTarget target = cache_target(parsed);
  if (!target.root) {
    out << "the kernel cache is memory-only (" << target.memory_only_reason << "): nothing to verify\n";
    return k_exit_ok;
  }
  nlohmann::json results = nlohmann::json::array();
  int bad = 0;
  int stale_count = 0;
  const cache::CurrentIdentity current = KernelRegistry::instance().current_identity();
  const std::vector<cache::ListedEntry> entries = cache::list_entries(*target.root);
  for (const cache::ListedEntry& e : entries) {
    std::string problem;
    std::string stale;
    std::string key = e.dir.substr(e.dir.find_last_of('/') + 1);
    if (!e.manifest) {
      problem = "unreadable manifest: " + e.problem;
    } else {
      const cache::CacheKey recomputed = cache::make_cache_key(e.manifest->key_fields);
      stale = cache::orphan_reason(*e.manifest, current).value_or("");
      if (!stale.empty() && recomputed.hex() != e.manifest->key) {
        // written by a kdajit build with another key encoding: this build
        // can check its cubin, not its key, and never looks it up
        stale += "; written under another key encoding, only its cubin checked";
        const cache::LookupResult r = cache::read_entry_cubin(e.dir, *e.manifest);
        if (!r.hit()) {
          problem = fmt::format("{}: {}", cache::miss_reason_name(r.miss), r.detail);
        } else if (e.manifest->key != key) {
          problem = fmt::format("its manifest's key {} is not its directory's name", e.manifest->key);
        }
      } else if (const cache::LookupResult r = cache::read_entry(e.dir, recomputed); !r.hit()) {
        // the key recomputed from the manifest's fields must name this directory
        problem = fmt::format("{}: {}", cache::miss_reason_name(r.miss), r.detail);
      } else if (recomputed.hex() != key) {
        problem = fmt::format("its key fields hash to {}, not its directory's name", recomputed.hex());
      } else if (load) {
        const std::optional<Target> t = find_target(e.manifest->key_fields.target);
        if (t && t->cc_major == device.cc_major && t->cc_minor <= device.cc_minor) {
          problem = loaded_problem(*r.entry);
        } else {
          skipped.push_back(key);
        }
      }
    }
    bad += problem.empty() ? 0 : 1;
    stale_count += stale.empty() ? 0 : 1;
    results.push_back({{"key", key}, {"ok", problem.empty()}, {"problem", problem}, {"stale", stale}});
    if (!parsed.has("--json")) {
      out << fmt::format("{} {}{}{}\n", problem.empty() ? "ok " : "BAD", key.substr(0, 16),
                         problem.empty() ? "" : ": " + problem, stale.empty() ? "" : " (stale: " + stale + ")");
    }
  }
  if (parsed.has("--json")) {
    out << nlohmann::json{{"root", *target.root}, {"entries", results}, {"bad", bad}, {"stale", stale_count}, {"not_loaded", skipped}}.dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  } else {
    out << fmt::format("{} entr{} checked, {} bad", entries.size(), entries.size() == 1 ? "y" : "ies", bad);
    if (stale_count > 0) {
      out << fmt::format(", {} stale ('kdajit cache gc --orphans' removes them)", stale_count);
    }
    if (load) {
      out << fmt::format("; {} not loaded (built for another compute capability than CC {}.{})", skipped.size(),
                         device.cc_major, device.cc_minor);
    }
    out << "\n";
  }
  if (bad > 0) {
    err << "kdajit cache verify: " << bad << " bad entr" << (bad == 1 ? "y" : "ies")
        << " (the runtime quarantines one on lookup and rebuilds it; 'kdajit cache gc' does not touch them)\n";
    return k_exit_cache;
  }
  return k_exit_ok;
}

} // namespace kda::tools
