/// \file
/// One GPU case of the serving-engine contract (spec sections 1.4, 1.5 and 8)
/// against the fp64 token reference: state pools (slots named by
/// ssm_state_indices, padded slot pitch), native checkpoints and the caller's
/// seq_order, on top of what gpu_prefill_case.hpp checks. Tolerances are spec
/// section 8's: per (sequence, head) relative RMS error <= 1e-2 of the output,
/// of the final state and of every checkpoint row; element-wise bounds on
/// short sequences and last chunks; no NaN (outputs and rows are poisoned
/// first). Untouched pool slots, the padding between slots, the state of
/// zero-length sequences and the checkpoint rows past the last one must keep
/// their bytes.
#pragma once

#include "reference/reference_problem.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kda::test {

struct ContractCase {
  std::string label;
  reference::testing::ProblemSpec spec;
  bool fp32_state = false;
  bool initial_state = true;         ///< false: no state in or out (checkpoint row 0 is zeros)
  std::int64_t pool_slots = 0;       ///< > 0: initial_state is a pool of this many slots (>= N), ssm_state_indices
  std::int64_t pool_pitch_pad = 0;   ///< elements after each slot of the pool (a padded slot pitch)
  std::int64_t checkpoint_every = 0; ///< native checkpoints every this many tokens (0: none)
  std::int64_t spare_checkpoint_rows = 2; ///< poisoned rows after the last one (must stay poisoned)
  std::vector<std::int32_t> seq_order;    ///< the caller's order (packed layout), empty: none
  std::uint64_t seed = 1;
  std::optional<std::string> schedule = std::nullopt;
  std::optional<std::string> target = std::nullopt;
  bool prepare_overlap = true;
};

struct ContractReport {
  std::string schedule;
  std::string target;
  double worst_output_rel_rms = 0.0;
  double worst_state_rel_rms = 0.0;
  double worst_checkpoint_rel_rms = 0.0;
  std::int64_t checkpoint_rows = 0; ///< rows the reference writes (checkpoint_cu_starts[N])
  std::uint64_t hash = 0;           ///< FNV-1a of the output's, the state's and the checkpoints' bytes
  bool prepare_overlapped = false;  ///< the call ran its prepare kernel beside the recurrence
  std::string prepare_overlap_reason;
};

/// A random permutation of 0 .. n - 1.
std::vector<std::int32_t> random_order(std::int64_t n, std::uint64_t seed);

/// Runs the case (CHECKs included) and returns the figures.
ContractReport run_contract_case(const ContractCase& c);

} // namespace kda::test
