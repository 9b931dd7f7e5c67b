/// \file
/// A fixed-layout problem's device buffers for the [gpu] tests that issue
/// calls from several streams or threads: random inputs, a bf16 state updated
/// in place, a poisoned output; and a stream owned by the test.
#pragma once

#include "device_array.hpp"
#include "reference/reference_problem.hpp"
#include "kdajit/kda.hpp"

#include <cstdint>
#include <vector>

namespace kda::test {

// One problem's device buffers (fixed layout, bf16 state updated in place).
struct DeviceProblem {
  DeviceProblem(std::int64_t batch, std::int64_t tokens, std::int64_t heads, std::uint64_t seed);
  /// Poisoned output, fresh initial state.
  void reset();
  PrefillArgs args(CUstream stream) const;
  /// The output's and the state's bytes (after a context synchronisation).
  std::vector<std::uint8_t> result() const;

  reference::testing::ProblemSpec spec;
  reference::testing::RandomProblem problem;
  DeviceArray q, k, v, g, beta, a_log, dt_bias, state, out;
  std::vector<std::uint16_t> initial_state;
};

struct Stream {
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream s = nullptr;
};

} // namespace kda::test
