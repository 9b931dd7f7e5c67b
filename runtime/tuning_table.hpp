/// \file
/// The measured kernel-choice table: for a device (compute capability and SM
/// count, never its name) and a shape class, the schedule `kdajit tune` found
/// fastest. The router uses it to choose among eligible schedules; without an
/// entry it takes the first eligible one.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kda {

/// How the (sequence x head) pairs of a call fill the GPU.
enum class ShapeClass {
  few,       ///< at most half the SMs busy
  one_wave,  ///< up to one CTA per SM
  two_waves, ///< up to two per SM
  many,      ///< more
};

std::string_view to_string(ShapeClass shape_class);
ShapeClass shape_class(std::int64_t pairs, int sm_count);

/// "cc9.0-sm132".
std::string tuning_device_key(int cc_major, int cc_minor, int sm_count);

class TuningTable {
public:
  inline static constexpr int k_format_version = 1;

  std::optional<std::string> lookup(const std::string& device_key, ShapeClass shape_class) const;
  void set(const std::string& device_key, ShapeClass shape_class, const std::string& schedule);
  bool empty() const { return m_entries.empty(); }

  /// {"format_version": 1, "devices": {"cc9.0-sm132": {"one_wave": "portable_c16", ...}}}
  nlohmann::json to_json() const;
  /// Nothing when the JSON is not a table of this format.
  static std::optional<TuningTable> from_json(const nlohmann::json& json);

  /// Reads `path`; a missing or unreadable file is an empty table.
  static TuningTable load(const std::string& path);
  /// Writes `path` atomically (temp file + rename). Throws CacheError on I/O failure.
  void save(const std::string& path) const;

private:
  std::map<std::string, std::map<std::string, std::string>> m_entries;
};

/// KDAJIT_TUNE_FILE, else <cache root>/tuning-v1.json, else nothing (memory-only cache).
std::optional<std::string> tuning_table_path(const std::optional<std::string>& cache_root);

} // namespace kda
