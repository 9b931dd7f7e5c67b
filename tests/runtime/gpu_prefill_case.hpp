/// \file
/// One GPU correctness case of recurrent_kda_prefill against the fp64 token
/// reference, with spec section 8's tolerances: per (sequence, head) relative
/// RMS error <= 1e-2 of the output and of the final state; element-wise
/// |x - ref| <= 2e-2 + 2e-2 |ref| on sequences up to 256 tokens and on the last
/// chunk of every sequence; no NaN (outputs are poisoned first, so an unwritten
/// element fails); zero-length sequences leave their state bit-identical.
#pragma once

#include "reference/reference_problem.hpp"

#include <optional>
#include <vector>
#include <string>

namespace kda::test {

enum class GpuStateMode {
  none,           ///< no state in, none out
  final_bf16,     ///< no initial state; output_final_state, kdajit allocates bf16
  final_fp32_caller, ///< no initial state; output_final_state into a caller fp32 buffer
  inplace_bf16,   ///< bf16 initial state updated in place
  inplace_fp32,   ///< fp32 initial state updated in place
};

struct GpuCase {
  std::string label;
  reference::testing::ProblemSpec spec;
  GpuStateMode state = GpuStateMode::inplace_bf16;
  bool int32_offsets = false;
  std::uint64_t seed = 1;
  bool prepare_overlap = true; ///< PrefillOptions::prepare_overlap
  std::optional<std::string> target = std::nullopt; ///< PrefillOptions::target (with a forced schedule), e.g. sm_90a_proxy
};

struct GpuCaseReport {
  double worst_output_rel_rms = 0.0;
  double worst_state_rel_rms = 0.0;
  double whole_output_rel_rms = 0.0; ///< over all sequences and heads (for the record)
  double whole_state_rel_rms = 0.0;
  std::int64_t elementwise_failures = 0;
  std::int64_t nan_count = 0;
  std::int64_t empty_state_changes = 0;
  std::string schedule;
  std::string target;
  bool prepare_overlapped = false;
  std::uint64_t output_hash = 0; ///< FNV-1a of the output's and the state's bytes (bit-identity checks)
};

/// A fixed-layout problem: `batch` sequences of `tokens` tokens, `heads` heads.
reference::testing::ProblemSpec fixed(std::int64_t batch, std::int64_t tokens, std::int64_t heads,
                                      reference::testing::GateDistribution gate =
                                          reference::testing::GateDistribution::standard);

/// A packed-layout problem: sequences of `lengths` tokens, `heads` heads.
reference::testing::ProblemSpec packed(std::vector<std::int64_t> lengths, std::int64_t heads);

/// Runs the case (CHECKs included) and returns the figures; `schedule` forces
/// one schedule instead of the routed one.
GpuCaseReport run_gpu_case(const GpuCase& c, const std::optional<std::string>& schedule = std::nullopt);

} // namespace kda::test
