/// \file
/// The resolved SMEM layout of one kernel: every buffer's region and offset,
/// and the totals. Produced by `plan_smem`, checked by `check_smem_aliasing`
/// and `check_smem_budget`.
#pragma once

#include "compiler/schedule_enums.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kda {

struct PlacedBuffer {
  std::string name;
  Region region = Region::stage;
  std::int64_t offset = 0; ///< inside its region (a stage slot, or the shared region)
  std::int64_t bytes = 0;
  std::int64_t alignment = 16;
  int first_phase = 0; ///< live over phases [first_phase, last_phase)
  int last_phase = 0;
  std::optional<std::string> alias;
  bool pinned = false;
  int alias_group = 0; ///< buffers connected by alias declarations share a group
  /// false: an `only_with` buffer of a plan without its feature (0 bytes, offset 0)
  bool present = true;
  std::string json_path;

  std::int64_t end() const { return offset + bytes; }
};

struct SmemLayout {
  std::vector<PlacedBuffer> buffers; ///< declaration order
  int stages = 1;
  std::int64_t stage_bytes = 0;      ///< one ring slot, rounded up to the stage alignment
  std::int64_t stage_used_bytes = 0; ///< highest byte any stage buffer reaches
  std::int64_t stage_alignment = 16;
  std::int64_t ring_bytes = 0;       ///< stages x stage_bytes
  std::int64_t shared_offset = 0;    ///< where the shared region starts
  std::int64_t shared_bytes = 0;
  std::int64_t base_alignment = 16;  ///< largest alignment of any buffer
  std::int64_t alignment_slack = 0;  ///< bytes to align the dynamic SMEM base (guaranteed 16 B)
  std::int64_t total_bytes = 0;      ///< ring + shared + slack: the dynamic SMEM to request

  const PlacedBuffer* find(const std::string& name) const;
};

/// Limits on declared buffers, far above any SMEM (232,448 B on the largest
/// target) and far below where the planner's int64 sums could overflow.
inline constexpr std::int64_t k_max_buffer_dimension = 1 << 20;
inline constexpr std::int64_t k_max_buffer_bytes = 1 << 30;
inline constexpr std::int64_t k_max_pinned_offset = 1 << 30;

/// The dynamic SMEM base is only guaranteed 16-byte aligned.
inline constexpr std::int64_t k_dynamic_smem_base_alignment = 16;

} // namespace kda
