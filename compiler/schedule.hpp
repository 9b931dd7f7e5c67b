/// \file
/// The schedule: one kernel design as data (architecture.md, "The schedule").
/// `parse_schedule` builds it from JSON; only `validate` turns it into a
/// `ValidatedSchedule`. JSON keys and these member names are the same words.
#pragma once

#include "compiler/schedule_enums.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kda {

/// The lifetime end of a buffer used through the whole program (barriers):
/// one past the last phase.
inline constexpr const char* k_end_phase = "end";

/// Half-open lifetime over a kernel's phases: [phase first written, phase last
/// read). A buffer whose last read is in the phase where another is first
/// written may share its bytes (an in-place transformation).
struct Lifetime {
  std::string first;
  std::string last;
};

/// One SMEM buffer of an aliasing plan. Its size is derived from shape x dtype.
struct BufferDecl {
  std::string name;
  std::string purpose;
  std::vector<std::int64_t> shape;
  DType dtype = DType::bf16;
  std::int64_t alignment = 16;
  Region region = Region::stage;
  Lifetime lifetime;
  std::optional<std::string> alias;   ///< reuses the bytes of this earlier buffer
  std::optional<std::int64_t> offset; ///< pinned offset inside its region (checked, not trusted)
  /// A feature compiled into the kernel ("checkpoints", the only one): the
  /// buffer takes bytes only in plans with it, and is sized 0 otherwise.
  std::optional<std::string> only_with;
  std::string json_path;              ///< e.g. "/smem/buffers/3"

  /// Saturate at INT64_MAX (0 with a dimension that is not positive): the
  /// checks report such shapes, nothing downstream overflows on them.
  std::int64_t elements() const;
  std::int64_t bytes() const;
};

struct SmemDecl {
  std::vector<BufferDecl> buffers;
  std::string json_path; ///< e.g. "/smem"
};

struct WarpRole {
  std::string name;
  int warps = 0;
  std::optional<int> registers; ///< per-thread register target (setmaxnreg), sm_90a and later
  std::string json_path;
};

struct PipelineDecl {
  int stages = 1;          ///< ring slots between chunk preparation and the ordered consumer
  int producer_groups = 1; ///< groups preparing chunks p, p + groups, ...
};

/// One kernel of a design: the single kernel of a fused schedule, or one entry
/// of `kernels[]` in a decomposed one.
struct KernelDecl {
  std::string name;
  KernelRole role = KernelRole::fused;
  std::vector<std::string> phases; ///< ordered steps of one chunk's program
  PipelineDecl pipeline;
  std::vector<WarpRole> warp_roles;
  SmemDecl smem;
  /// CTAs per SM the kernel is built for (`__launch_bounds__` second
  /// argument; ptxas then keeps registers within 65,536 / (threads x this)).
  /// 0: not requested. Validated against the target's SMEM and threads per SM.
  int min_blocks_per_sm = 0;
  /// Chunks one CTA of a chunk-parallel (prepare) kernel handles in turn; with
  /// a 2-slot ring it loads chunk i + 1 while preparing chunk i. 1: one chunk.
  int chunks_per_cta = 1;
  /// Request the target's whole shared memory per block at launch, so that no
  /// other CTA (a concurrently running prepare kernel's) shares the SM.
  bool exclusive_sm = false;
  /// Launch with programmatic stream serialization (sm_90+): a decomposed
  /// design's recurrence may start while the prepare kernel before it in the
  /// stream finishes; its fragment waits for that kernel's results
  /// (griddepcontrol.wait) before reading them.
  bool programmatic_launch = false;
  std::string json_path; ///< "" for a fused schedule's top level, "/kernels/i" otherwise

  int warps() const;
  int threads() const { return 32 * warps(); }
  /// Index of `phase` in `phases` (`k_end_phase`: phases.size()), or -1.
  int phase_index(const std::string& phase) const;
};

struct StateDecl {
  StatePrecision precision = StatePrecision::fp32;
  StateResidence residence = StateResidence::registers;
};

/// Natural-log lower_bound values the schedule accepts: [min, max).
struct LowerBoundRange {
  double min = -5.0;
  double max = 0.0;
};

struct Eligibility {
  int head_dim = 128;
  int min_heads = 1;
  std::optional<int> max_heads;
  LowerBoundRange lower_bound;
  std::vector<LayoutKind> layouts;
  std::vector<StatePrecision> state_dtypes;
  /// Caller features the schedule offers (its family's generator must
  /// implement them: PlanFeatures); a call asking for one the schedule does
  /// not offer makes it ineligible.
  bool checkpoints = false; ///< native checkpoints (intervals its chunk size divides)
  bool state_pool = false;  ///< ssm_state_indices into an initial_state pool
  bool seq_order = false;   ///< a caller's order of packed sequences
};

struct Numerics {
  std::vector<std::string> bf16_rounding; ///< intermediates rounded to bf16, in program order
  /// Mqk's diagonal: from the (rounded) anchored operands like every other
  /// entry, or scale rq rk (q . k) from the raw bf16 rows in fp32 (exact
  /// products), which one-token sequences need when Qd_a and Ki are bf16.
  MqkDiagonal mqk_diagonal = MqkDiagonal::operands;
};

/// A decomposed design whose prepare kernel may run beside its recurrence
/// (`prepare_overlap`): when every recurrence CTA is resident at once and a
/// prepare CTA fits beside each, the runtime prepares the first `lead` chunks
/// of every (sequence, head) pair first, then runs the recurrence while a
/// second prepare kernel makes the rest, handing records over by per-record
/// ready flags. The lead comes from this throughput model (measured on one
/// GPU; it moves time only, never results):
///   lead = max(min_lead_chunks, ceil(n (1 - t rho (sms - r + share r) / pairs)))
/// n chunks per sequence, t = recurrence_us_per_chunk, rho =
/// prepare_chunks_per_us_per_sm (alone, full occupancy), share =
/// beside_recurrence_share (a co-resident prepare CTA's fraction of an SM's
/// prepare rate), r recurrence CTAs.
struct PrepareOverlapModel {
  double recurrence_us_per_chunk = 0.0;
  double prepare_chunks_per_us_per_sm = 0.0;
  double beside_recurrence_share = 0.0;
  int min_lead_chunks = 1;
  /// Run them together only when the prepare time the overlap takes off the
  /// critical path, (n - lead) pairs / (rho sms), is at least this (the
  /// second stream, its events and the extra launch cost about 10 us).
  double min_saving_us = 0.0;
};

struct PrepareOverlapDecl {
  PrepareOverlapModel model;
  std::string json_path; ///< "/prepare_overlap"
};

struct Schedule {
  std::string source; ///< where it came from (a file name), for messages
  /// One of schedules/*.json, or an author's file from KDAJIT_SCHEDULE_PATH
  /// (compiler/schedule_library.hpp), which routing takes automatically only
  /// after it passed `kdajit selftest` on the device.
  bool shipped = true;
  /// `hardware_verified` (default true): false for a shipped design no GPU
  /// has run yet, which routing treats as an author's schedule (taken
  /// automatically only after `kdajit selftest` passed it on the device).
  bool hardware_verified = true;
  std::string name;
  std::string description;
  Family family = Family::warp_mma;
  /// What writes its kernels (`backend`, default cuda): the token family's
  /// are LLVM IR (compiler/ir/), every other family's CUDA from templates/.
  Backend backend = Backend::cuda;
  std::vector<std::string> targets;
  int chunk_size = 16;
  ExponentAnchor exponent_anchor = ExponentAnchor::none;
  int m_tile = 128;
  StateDecl state;
  Decomposition decomposition = Decomposition::fused;
  GridKind grid = GridKind::direct;
  int tmem_columns = 0;
  Eligibility eligibility;
  Numerics numerics;
  std::optional<PrepareOverlapDecl> prepare_overlap; ///< decomposed designs only
  std::vector<KernelDecl> kernels; ///< fused: exactly one, built from the top-level fields
  nlohmann::json document;         ///< the parsed JSON, for canonical hashing
};

/// Parses a schedule document. Throws `ScheduleError` listing every problem
/// found (unknown keys, wrong types, missing fields, unknown words), each with
/// its JSON path. `source` names the document in messages.
Schedule parse_schedule(const nlohmann::json& document, const std::string& source);

/// Parses schedule text; a JSON syntax error is a `ScheduleError` too.
Schedule parse_schedule_text(const std::string& text, const std::string& source);

/// Reads and parses a schedule file. An unreadable file is a `ScheduleError`
/// with an empty JSON path.
Schedule load_schedule_file(const std::string& path);

} // namespace kda
