/// \file
/// A random problem's read-only inputs on the device (q, k, v, g, beta, A_log,
/// dt_bias, cu_seqlens in both dtypes) and the call arguments that name them.
#pragma once

#include "device_array.hpp"
#include "reference/reference_problem.hpp"
#include "kdajit/prefill_args.hpp"

namespace kda::test {

struct DeviceInputs {
  explicit DeviceInputs(const reference::testing::RandomProblem& problem);
  /// q, k, v, g [B,T,H,128], beta (with the spec's token stride), A_log,
  /// dt_bias [H,128], lower_bound -5, and cu_seqlens for a packed spec.
  PrefillArgs args(bool int32_offsets = false) const;

  reference::testing::ProblemSpec spec;
  std::int64_t sequences = 0;
  DeviceArray q, k, v, g, beta, a_log, dt_bias, cu32, cu64;
};

} // namespace kda::test
