#include "tools/cli.hpp"

#include "compiler/errors.hpp"
#include "tools/args.hpp"
#include "tools/exit_codes.hpp"
#include "tools/json_output.hpp"
#include "tools/schedule_inputs.hpp"

#include <algorithm>
#include <ostream>

namespace kda::tools {
namespace {

const char* const k_usage = R"(kdajit - JIT compiler and runtime for Kimi Delta Attention (KDA) prefill kernels

usage:
  kdajit schedule check FILE... [--target T] [--json]
      Parse and validate schedules against target T, or against every target
      each schedule lists. Prints one line per (schedule, target), or every
      problem found with its JSON path.
  kdajit schedule explain FILE... [--target T] [--json]
      Print the resolved SMEM layout of each kernel (offsets, sizes, lifetimes,
      aliases, totals against the target's limit: with checkpoints, and without
      where buffers are only with them) and the TMEM columns.
  kdajit emit --schedule S --target T [--state bf16|fp32] [--layout fixed|packed] [--checkpoints] [--plan]
              [--backend cuda|llvm] [--json]
      Print the CUDA source generated for a schedule (a shipped name or a
      file), target and shape key (--checkpoints: with native checkpoints
      compiled in), or for an llvm-backend schedule (token_llvm, the LLVM
      tier) its LLVM IR and the PTX LLVM writes for T; with --plan, the entry
      points and launch geometry instead. --backend must be the schedule's.
  kdajit aot build --plan PLAN.json --out DIR [--jobs N] [--json]
      Compile a plan (schedules x targets x shape keys; aot/all-shipped.json is
      every shipped schedule NVRTC compiles, for all its targets) in parallel and write
      DIR/kdajit.kdab (a bundle the runtime serves before the disk cache and
      NVRTC: KDAJIT_BUNDLE_PATH=DIR or register_kernel_bundle()) and a fatbin
      per module (DIR/fatbin/, a cubin per target, made with fatbinary).
  kdajit repro --schedule S --target T [--state bf16|fp32] [--layout fixed|packed] [--checkpoints] [--out DIR] [--json]
      Write the generated CUDA source, the exact NVRTC options kdajit uses
      (one per line) and a script that replays the compile with libnvrtc
      (<name>.replay.py: writes the cubin and the log), so a compile can be
      reproduced outside kdajit. For an llvm-backend schedule (token_llvm,
      token_llvm_smem): the LLVM IR (.ll), the PTX kdajit's LLVM writes from
      it, the nvJitLink options and a script that assembles the PTX with
      libnvJitLink (and names the llc-19 command that writes it again).
  kdajit compile (--schedule S... | --all) [--target T]... [--state bf16|fp32] [--layout fixed|packed] [--checkpoints] [--json]
      Fill the kernel cache: compile (or find) each schedule for its targets
      (or the given ones) and one shape key. --all: every shipped schedule with
      a code generator. Prints each entry's key, time and resources.
  kdajit env [--json]
      Versions (kdajit, generator, NVRTC, driver), devices with CC, SM count
      and where a call would be routed, the cache and lock directories with
      every candidate's verdict, the kdajit variables set, and the bundles.
  kdajit cache ls [--target T] [--schedule S] [--stale] [--cache-dir DIR] [--json]
      List the kernel cache's entries (key, schedule, target, shape, size,
      compile time, registers and spills per entry point); --stale: only
      those of another generator, ABI, cache layout or NVRTC.
  kdajit cache show PREFIX [--log] [--source] [--cache-dir DIR] [--json]
      One entry in detail (key fields, checksums, entry points and their
      resources, launch, producer, times), found by a key prefix of at least
      4 hex digits; --log and --source add the NVRTC log and the generated CUDA.
  kdajit cache explain SCHEDULE --target T [--state bf16|fp32] [--layout fixed|packed] [--checkpoints] [--cache-dir DIR] [--json]
      The cache key a compile of SCHEDULE (a shipped name or a file) would
      have, field by field, and whether the cache holds it; if not, the
      nearest entry and how each differing key field differs. Exit 9 when
      absent.
  kdajit cache verify [--load] [--cache-dir DIR] [--json]
      Check every entry: manifest, key (recomputed from its fields) and cubin
      size and SHA-256; with --load (GPU) also load each cubin and compare its
      entry points' registers, stack frame and static SMEM with the manifest.
      Entries of another generator or toolchain are marked stale (gc --orphans
      removes them); one written by a kdajit build with another key encoding
      has only its cubin checked. Exit 5 when one is bad.
  kdajit cache gc [--max-bytes N[K|M|G]] [--older-than DAYS] [--orphans] [--dry-run] [--cache-dir DIR] [--json]
      Evict entries: with --orphans those of another generator, ABI, cache
      layout or NVRTC; with --older-than those unused for longer; then, while
      the rest exceeds the cap (--max-bytes, else KDAJIT_MAX_BYTES, else 2G),
      orphans and then the least recently used. Never an entry another
      process is building or publishing. --dry-run lists what would go.
  kdajit cache clear [--cache-dir DIR] [--json]
      Remove every entry (except one being built or published right now).
  kdajit route [--cc X.Y [--sms N] [--nvrtc X.Y]] [--layout L] [--state D] [--heads H] [--sequences N]
               [--tokens T] [--lower-bound LB] [--pool] [--seq-order] [--checkpoint-every P]
               [--schedule S | --family F] [--json]
      Explain which schedule and target a call gets, on the current GPU or on
      a simulated device (eligibility, target rule, the SM-count table of
      CC 12.x, labelled where it falls back, tuning table: measured, borrowed
      from the nearest measured device of the CC, or the static preference;
      the shape class from the sequence x head pairs and --tokens per
      sequence, default 1024: at most 64 is a short-sequence class, at
      most 8 a tiny one, each taking its fill's entry one tier longer,
      labelled, where none was measured);
      --pool, --seq-order, --checkpoint-every: a call with a state pool, its
      own sequence order, native checkpoints every P tokens.
  kdajit verify [--seqlens a,b,... | --fixed B,T] [--heads H] [--state bf16|fp32]
                [--gate standard|minus8|plus8|bias8] [--seed N] [--schedule S [--target T]] [--no-overlap] [--json]
      Run one random prefill on the GPU and check it against the CPU fp64
      reference with the tolerances of spec section 8 (routed, or schedule S;
      --target T: compile it for T, e.g. sm_90a_proxy, the Hopper proxy of a
      tcgen05 schedule, or sm_120a_proxy, an SM120 plan compiled for sm_90a;
      --no-overlap: a prepare_overlap schedule's kernels one
      after the other).
  kdajit accuracy [--state fp32|bf16] [--schedule S] [--json]
      The six accuracy cases of the peers' H200 table: relative RMS error of
      output and state beside FlashKDA's and FLA's, and the ratio to FLA's.
  kdajit selftest [--all | --schedule S] [--timeout SECONDS] [--dry-run] [--json]
      Trust on first use: check each schedule this GPU runs that never ran on
      such hardware (tcgen05 on CC 10.x, the SM120 designs on CC 12.x, every
      CC 12.x schedule's sm_120a/sm_120 build and the schedules of
      KDAJIT_SCHEDULE_PATH) against the CPU fp64
      reference (four small calls: packed and fixed, bf16 and fp32 state, the
      gate at -8 and +8; then one timed workload), each in a child process
      killed after SECONDS (default 300), so that a hang or a crash is a
      recorded failure. The results go into the local tuning table with the
      device, driver, NVRTC, kdajit version and the schedule's source hash;
      routing takes such a schedule automatically only once it passed here.
      --all: every schedule this GPU runs, and each it cannot run natively
      through its proxy (sm_90a_proxy, sm_120a_proxy); exit 8 when one failed.
  kdajit tune [--iters N] [--warmup N] [--timeout SECONDS] [--dry-run] [--json]
      Run selftest first, then benchmark every eligible shipped schedule that
      is verified on such hardware or passed selftest here, on the bench
      workloads of each shape class (how the sequence x head pairs fill the
      SMs; workloads of at most 32,768 tokens) and write the one with the
      lowest geometric mean into the local tuning table (KDAJIT_TUNE_FILE,
      else <cache dir>/tuning-v1.json), keyed by CC and SM count. Routing
      reads it over the tables shipped in tuning/*.json, entry by entry.
  kdajit bench [--cases a,b] [--iters N] [--warmup N] [--cold] [--schedule S [--target T]] [--no-overlap]
               [--back-to-back]
               [--pool] [--pool-slots S] [--checkpoint-every P] [--no-state] [--planned] [--profile-range] [--json]
      Time recurrent_kda_prefill on the peers' workloads (GPU needed): median
      of N calls after warm-up, CUDA events, bf16 state updated in place; ms,
      GB/s, ratio to the memory floor and to FlashKDA and FLA on the H200
      ("-" where a peer has no figure: the short-sequence workloads
      h96_packed_1024x8 and h32_packed_256x64 have FlashKDA's only,
      h32_packed_1024x16 none).
      --schedule S times schedule S wherever it is eligible (else refused),
      --target T compiled for T (a proxy: sm_90a_proxy, sm_120a_proxy);
      --no-overlap runs a prepare_overlap schedule's kernels one after the
      other (the kernel column ends in (overlapped) when they ran together,
      and a line below it gives the model's decision and lead);
      --back-to-back also times N calls enqueued back to back between two
      events (a diagnostic: the host's time before each call's first launch
      hidden behind the call before).
      --pool: the state is a pool of 2N slots (ssm_state_indices, every other
      slot); --pool-slots S: a pool of S slots (at least N; the sequences
      S / N slots apart); --checkpoint-every P: native checkpoints every P tokens
      (a line below each workload gives the rows' bytes and their time at the
      memory floor's 4.3 TB/s; --json: checkpoint_bytes);
      --no-state: calls without an initial and a final state (a diagnostic:
      the states' bytes out of the call, so that what the kernels compute
      binds a short-sequence call; GB/s and xfloor then count the tokens'
      bytes, the peers' columns print "-"; not with --pool).
      --planned: also PrefillPlan::run and a CUDA graph of one run replayed.
      --profile-range: each workload's timed calls between cuProfilerStart and
      cuProfilerStop, for a profiler's range replay (ncu --replay-mode
      app-range: whole calls, kernels side by side).
      The first workload's host time per call is printed for each path after
      every workload is timed (its 2,000 calls would otherwise heat the GPU
      before the timings), with the driver calls it makes, its time outside
      them and its time until its first launch, memset, event record or
      stream wait has returned (the GPU has nothing of the call before that).
  kdajit first-call [--workload W] [--processes N] [--json]
      The wall time of a process's first call of workload W (default
      h96_mixed, GPU needed): N new processes (default 5), each with its
      context and inputs made before the clock, an empty kernel cache and no
      bundle, once with the tiered JIT (the LLVM tier's token kernel answers
      while NVRTC builds the routed one in the background) and once without;
      the medians, with the steps (IR, PTX, cubin or NVRTC, module load, the
      rest) and a second, warm call.
  kdajit --help | help        this text
  kdajit --version [--json]   the version

with --json, every command prints one JSON document on stdout, also when it
fails: {"error": {"kind", "message", "exit_code"}}

targets: sm_80, sm_90, sm_90a, sm_100a, sm_100f, sm_103a, sm_120a, sm_120
(proxies for the H200: sm_90a_proxy, sm_120a_proxy)

exit codes:
  0   success (every schedule checked is valid)
  1   a schedule failed to parse, validate or lower, or a JSON input holds
      invalid JSON or a value of the wrong type or range
  2   bad command line (unknown command or option, missing value, a value
      that is not a number of its kind or out of its range, unknown target)
  3   an input file cannot be read, is not a regular file or is too large
  4   NVRTC or the CUDA driver failed
  5   cache I/O failed (a compiled kernel not written to the disk cache
      included), or cache verify found a bad entry
  6   a bad call argument (tensor shapes, dtypes, lower_bound, ...)
  7   the command needs a GPU and none is usable
  8   verify: the GPU result is outside the tolerances
  9   cache show / cache explain: no entry has that key
  70  internal error (a bug in kdajit)
)";

int dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    (args.empty() ? err : out) << k_usage;
    return args.empty() ? k_exit_usage : k_exit_ok;
  }
  if (args[0] == "--version") {
    const ParsedArgs parsed = parse_args(std::vector<std::string>(args.begin() + 1, args.end()), {"--json"}, {});
    if (!parsed.positional.empty()) {
      throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
    }
    if (parsed.has("--json")) {
      out << nlohmann::json{{"kdajit", KDAJIT_VERSION}}.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
    } else {
      out << "kdajit " << KDAJIT_VERSION << "\n";
    }
    return k_exit_ok;
  }
  if (args[0] == "compile") {
    return compile_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "route") {
    return route_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "cache") {
    const std::string sub = args.size() > 1 ? args[1] : "";
    const std::vector<std::string> rest(args.begin() + std::min<std::size_t>(2, args.size()), args.end());
    if (sub == "ls") {
      return cache_ls_command(rest, out, err);
    }
    if (sub == "gc") {
      return cache_gc_command(rest, out, err);
    }
    if (sub == "clear") {
      return cache_clear_command(rest, out, err);
    }
    if (sub == "show") {
      return cache_show_command(rest, out, err);
    }
    if (sub == "verify") {
      return cache_verify_command(rest, out, err);
    }
    if (sub == "explain") {
      return cache_explain_command(rest, out, err);
    }
    throw UsageError(sub.empty() ? "'cache' needs a subcommand: ls, show, explain, verify, gc or clear"
                                 : "unknown subcommand 'cache " + sub + "' (expected ls, show, explain, verify, gc or clear)");
  }
  if (args[0] == "repro") {
    return repro_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "aot") {
    if (args.size() < 2 || args[1] != "build") {
      throw UsageError("'aot' has one subcommand: build");
    }
    return aot_build_command(std::vector<std::string>(args.begin() + 2, args.end()), out, err);
  }
  if (args[0] == "env") {
    return env_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "accuracy") {
    return accuracy_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "selftest") {
    return selftest_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "tune") {
    return tune_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "verify") {
    return verify_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "first-call") {
    return first_call_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "bench") {
    return bench_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "emit") {
    return emit_command(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "schedule") {
    const std::vector<std::string> rest(args.begin() + std::min<std::size_t>(2, args.size()), args.end());
    const std::string sub = args.size() > 1 ? args[1] : "";
    if (sub == "check") {
      return schedule_check_command(rest, out, err);
    }
    if (sub == "explain") {
      return schedule_explain_command(rest, out, err);
    }
    throw UsageError(sub.empty() ? "'schedule' needs a subcommand: check or explain"
                                 : "unknown subcommand 'schedule " + sub + "' (expected check or explain)");
  }
  throw UsageError("unknown command '" + args[0] + "'");
}

} // namespace

std::string usage_text() {
  return k_usage;
}

namespace {

// With --json, a failed command also prints one JSON document on stdout
// saying why (the message is on stderr as well).
int failed(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, int code, const char* kind,
           const std::string& message, const std::string& hint = "") {
  err << "kdajit: " << message << "\n" << hint;
  if (std::find(args.begin(), args.end(), "--json") != args.end()) {
    out << nlohmann::json{{"error", {{"kind", kind}, {"message", message}, {"exit_code", code}}}}.dump(
               2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  }
  return code;
}

} // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    return dispatch(args, out, err);
  } catch (const UsageError& e) {
    return failed(args, out, err, k_exit_usage, "usage", e.what(), "(run 'kdajit --help' for usage)\n");
  } catch (const InputError& e) {
    return failed(args, out, err, k_exit_io, "input", e.what());
  } catch (const ContentError& e) {
    return failed(args, out, err, k_exit_invalid_schedule, "content", e.what());
  } catch (const TensorError& e) {
    return failed(args, out, err, k_exit_tensor, "tensor", e.what());
  } catch (const ScheduleError& e) {
    return failed(args, out, err, k_exit_invalid_schedule, "schedule", e.what());
  } catch (const ToolchainError& e) {
    return failed(args, out, err, k_exit_toolchain, "toolchain", e.what());
  } catch (const CacheError& e) {
    return failed(args, out, err, k_exit_cache, "cache", e.what());
  } catch (const InternalError& e) {
    return failed(args, out, err, k_exit_internal, "internal", e.what());
  } catch (const nlohmann::json::exception& e) {
    // every JSON document kdajit reads is the user's (schedules, plans,
    // tuning tables, manifests): a type or range kdajit did not expect there
    // is bad content
    return failed(args, out, err, k_exit_invalid_schedule, "content",
                  std::string("a JSON input holds a value of an unexpected type or range: ") + e.what());
  } catch (const std::exception& e) {
    return failed(args, out, err, k_exit_internal, "internal", std::string("internal error: ") + e.what());
  }
}

} // namespace kda::tools
