/// \file
/// One random prefill on the GPU against the CPU fp64 reference (what
/// `kdajit verify` and `kdajit accuracy` run).
#pragma once

#include "kdajit/prefill_args.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kda::tools {

/// Input distributions: q, k, v, beta randn and state 0.25 randn always;
/// the gate as in spec section 8 and peers-h200.md's accuracy table.
enum class VerifyGate {
  standard, ///< g randn, A_log and dt_bias U[0, 1)
  minus8,   ///< g = -8 everywhere, A_log = 0, dt_bias = 0 (slow decay)
  plus8,    ///< g = +8 everywhere, A_log = 0, dt_bias = 0 (fast decay)
  bias8,    ///< g = 0, A_log = 0, dt_bias U[-8, 8]
};

struct VerifySpec {
  std::vector<std::int64_t> seqlens{300, 17, 0, 1000, 65}; ///< non-empty: packed layout
  std::int64_t batch = 1;  ///< fixed layout (seqlens empty): B sequences of `tokens`
  std::int64_t tokens = 0;
  std::int64_t heads = 4;
  bool fp32_state = false;
  VerifyGate gate = VerifyGate::standard;
  std::uint64_t seed = 7;
  PrefillOptions options; ///< a forced schedule or family (default: routed)
};

struct VerifyFigures {
  std::string schedule;
  double worst_output = 0.0; ///< worst per-(sequence, head) relative RMS
  double worst_state = 0.0;
  double whole_output = 0.0; ///< over the whole tensor
  double whole_state = 0.0;
  std::int64_t elementwise_failures = 0;
  std::int64_t nan = 0;
  bool pass = false; ///< spec section 8's tolerances
};

VerifyFigures run_verification(const VerifySpec& spec);

} // namespace kda::tools
