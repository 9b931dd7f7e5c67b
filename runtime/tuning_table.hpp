/// \file
/// The measured kernel-choice table: for a device (compute capability and SM
/// count, never its name) and a shape class, the schedule `kdajit tune` found
/// fastest. The router uses it to choose among eligible schedules (a device
/// without an entry borrows its CC's nearest measured device; without any,
/// the router's static preference decides). Two sources: the local table
/// `kdajit tune` writes, and the tables shipped in tuning/*.json (embedded at
/// build time); local entries win, entry by entry. The local table also holds
/// the records of `kdajit selftest` (SelftestRecord): which schedules of a
/// family never run on a device's hardware passed there, the trust routing
/// needs before it takes them automatically.
#pragma once

#include "compiler/embedded_file.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kda {

/// How the (sequence x head) pairs of a call fill the GPU, and whether its
/// sequences are short (at most k_short_sequence_tokens tokens on average)
/// or tiny (at most k_tiny_sequence_tokens).
enum class ShapeClass {
  few,             ///< at most half the SMs busy
  one_wave,        ///< up to one CTA per SM
  two_waves,       ///< up to two per SM
  many,            ///< more
  few_short,       ///< the same four fills, short sequences
  one_wave_short,
  two_waves_short,
  many_short,
  few_tiny,        ///< the same four fills, tiny sequences
  one_wave_tiny,
  two_waves_tiny,
  many_tiny,
};

/// The average tokens per sequence (total / N) at or below which a call is
/// of a short-sequence class: each (sequence, head) then moves about as many
/// bytes of state (64 KiB of bf16, read and written) as of tokens (1,282 B
/// each), and a design that hides the state's traffic wins.
inline constexpr std::int64_t k_short_sequence_tokens = 64;
/// The average tokens per sequence at or below which a call is of a tiny-
/// sequence class: half a 16-token chunk, so that a design may prepare two
/// sequences' chunks in one 16-row tile (sm90_wgmma_c16_fused).
inline constexpr std::int64_t k_tiny_sequence_tokens = 8;

std::string_view to_string(ShapeClass shape_class);
/// The class of a call of `pairs` (sequence x head) pairs and `average_tokens`
/// tokens per sequence on a device of `sm_count` SMs.
ShapeClass shape_class(std::int64_t pairs, int sm_count, std::int64_t average_tokens);
/// The average tokens per sequence of `total_tokens` in `sequences` (0 for none).
std::int64_t average_tokens(std::int64_t total_tokens, std::int64_t sequences);
/// A short- or tiny-sequence class.
bool short_sequences(ShapeClass shape_class);
/// The class of the same fill with long sequences (a long class: itself).
ShapeClass long_sequence_class(ShapeClass shape_class);
/// The class of the same fill one tier longer: tiny -> short -> long (a long
/// class: itself). The router falls back along it where a class has no entry.
ShapeClass longer_sequence_class(ShapeClass shape_class);
/// Every class, the four long ones first, then the short and the tiny ones.
std::span<const ShapeClass> all_shape_classes();

/// "cc9.0-sm132".
std::string tuning_device_key(int cc_major, int cc_minor, int sm_count);

/// One `kdajit selftest` result: a schedule on a target, checked against the
/// CPU fp64 reference on one device in one environment. A record speaks only
/// for the identity it names: the device (CC and SM count), the driver, the
/// NVRTC, the kdajit version and the SHA-256 of the schedule's emitted source
/// (the plain plan's); a change to any of them needs a new selftest.
struct SelftestRecord {
  std::string device;        ///< tuning_device_key, e.g. "cc10.0-sm148"
  std::string schedule;
  std::string target;
  std::string source_sha256; ///< of the schedule's plain plan for `target` (ShapeKey{})
  int driver_version = 0;    ///< cuDriverGetVersion
  std::string nvrtc;         ///< "13.0"
  std::string kdajit;        ///< the kdajit version
  bool pass = false;
  std::string detail;        ///< the figures, or why it failed (a timeout, a signal, a tolerance)
  /// Same device, schedule, target, source, driver, NVRTC and kdajit version.
  bool same_identity(const SelftestRecord& other) const;
};

/// The SM-count table's answer for a device (seed doc 003, "SM120a prefill
/// subset"): where a CC has both a fused and a decomposed design, the fused
/// one runs iff the call's (sequence x head) pairs reach `fused_min_pairs`;
/// thresholds measured per SM count, any other device of the CC (or of the CC
/// major, never measured) taking those of `fallback_sm_count`, labelled.
struct DecompositionRule {
  std::string cc;                   ///< the table's entry, "cc12.0"
  int sm_count = 0;                 ///< the measured part whose threshold applies
  std::int64_t fused_min_pairs = 0; ///< the fused design iff N x H >= this
  bool fallback = false;            ///< the device itself was not measured
  /// "cc12.0, 110 SMs (measured)" or "cc12.0, the 156-SM part's threshold (fallback: ...)".
  std::string label(int device_sm_count, int cc_major, int cc_minor) const;
};

class TuningTable {
public:
  inline static constexpr int k_format_version = 1;

  std::optional<std::string> lookup(const std::string& device_key, ShapeClass shape_class) const;
  void set(const std::string& device_key, ShapeClass shape_class, const std::string& schedule);
  bool empty() const { return m_entries.empty(); }
  /// The device keys of compute capability cc_major.cc_minor with their SM
  /// counts ("cc9.0-sm132" -> 132).
  std::vector<std::pair<std::string, int>> devices_of_cc(int cc_major, int cc_minor) const;

  /// The SM-count table's rule for a device: the entry of its CC (its own SM
  /// count, else the entry's fallback), else a fallback from an entry of the
  /// same CC major; nothing when no entry speaks for the CC major.
  std::optional<DecompositionRule> decomposition_rule(int cc_major, int cc_minor, int sm_count) const;

  /// Adds `record`, replacing one of the same identity.
  void record_selftest(const SelftestRecord& record);
  /// The record of `identity`'s identity (its pass and detail are ignored), if any.
  const SelftestRecord* find_selftest(const SelftestRecord& identity) const;
  const std::vector<SelftestRecord>& selftests() const { return m_selftests; }

  /// {"format_version": 1, "devices": {"cc9.0-sm132": {"one_wave": "portable_c16", ...}},
  ///  "selftests": [{"device": ..., "schedule": ..., "pass": true, ...}],
  ///  "decomposition": {"cc12.0": {"fused_min_pairs": {"110": 128, ...}, "fallback_sm_count": 156}}}
  /// ("selftests" and "decomposition" only when there are some)
  nlohmann::json to_json() const;
  /// Nothing when the JSON is not a table of this format.
  static std::optional<TuningTable> from_json(const nlohmann::json& json);

  /// Reads `path`; a missing or unreadable file is an empty table.
  static TuningTable load(const std::string& path);
  /// Writes `path` atomically (temp file + rename). Throws CacheError on I/O failure.
  void save(const std::string& path) const;

  /// The tables of tuning/*.json, merged (embedded at build time).
  static const TuningTable& shipped();
  /// Adds every entry (and selftest record) of `other` that this table lacks.
  void fill_from(const TuningTable& other);

private:
  std::map<std::string, std::map<std::string, std::string>> m_entries;
  std::vector<SelftestRecord> m_selftests;
  struct DecompositionEntry {
    std::map<int, std::int64_t> fused_min_pairs; ///< SM count -> threshold
    int fallback_sm_count = 0;                   ///< a key of fused_min_pairs
  };
  std::map<std::string, DecompositionEntry> m_decomposition; ///< "cc12.0" -> its thresholds
};

/// KDAJIT_TUNE_FILE, else <cache root>/tuning-v1.json, else nothing (memory-only cache).
std::optional<std::string> tuning_table_path(const std::optional<std::string>& cache_root);

/// What routing reads: the local table at `path` (if any) over the shipped one.
TuningTable routing_tuning_table(const std::optional<std::string>& path);

/// tuning/*.json (generated by cmake/embed_files.cmake).
std::span<const EmbeddedFile> embedded_tuning_tables();

} // namespace kda
