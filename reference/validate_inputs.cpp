#include "reference/validate_inputs.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace kda::reference {
namespace {

void expect_size(const char* argument, std::size_t actual, std::int64_t expected, const char* shape) {
  if (static_cast<std::int64_t>(actual) != expected) {
    throw TensorError(argument, fmt::format("expected {} elements ({}), got {}", expected, shape, actual));
  }
}

void validate_beta(const PrefillInputs& inputs) {
  const std::int64_t stride = inputs.beta_row_stride != 0 ? inputs.beta_row_stride : inputs.heads;
  if (stride < inputs.heads) {
    throw TensorError("beta", fmt::format("token-row stride {} is smaller than the head count {}", stride,
                                          inputs.heads));
  }
  const std::int64_t rows = inputs.batch * inputs.tokens;
  const std::int64_t needed = rows == 0 ? 0 : (rows - 1) * stride + inputs.heads;
  if (static_cast<std::int64_t>(inputs.beta.size()) < needed) {
    throw TensorError("beta", fmt::format("expected at least {} elements ([B*T = {}] rows of stride {}, H = {}), "
                                          "got {}",
                                          needed, rows, stride, inputs.heads, inputs.beta.size()));
  }
}

void validate_state(const PrefillInputs& inputs, std::span<const SequenceRange> sequences) {
  const auto n = static_cast<std::int64_t>(sequences.size());
  if (!inputs.initial_state) {
    if (!inputs.ssm_state_indices.empty()) {
      throw TensorError("ssm_state_indices", "given without an initial_state pool");
    }
    return;
  }
  const StateBuffer& state = *inputs.initial_state;
  if (state.slots() < 0) {
    throw TensorError("initial_state", fmt::format("slot count must not be negative, got {}", state.slots()));
  }
  expect_size("initial_state", state.size(), state.slots() * inputs.heads * k_state_elements, "[slots, H, 128, 128]");
  if (inputs.ssm_state_indices.empty()) {
    if (state.slots() != n) {
      throw TensorError("initial_state", fmt::format("expected {} states (one per sequence), got {}", n,
                                                     state.slots()));
    }
    return;
  }
  expect_size("ssm_state_indices", inputs.ssm_state_indices.size(), n, "[N]");
  std::vector<bool> used(static_cast<std::size_t>(state.slots()), false);
  for (std::size_t i = 0; i < inputs.ssm_state_indices.size(); ++i) {
    const std::int32_t slot = inputs.ssm_state_indices[i];
    if (slot < 0 || slot >= state.slots()) {
      throw TensorError("ssm_state_indices", fmt::format("entry {} is slot {}, outside the pool of {} slots", i,
                                                         slot, state.slots()));
    }
    if (used[static_cast<std::size_t>(slot)]) {
      throw TensorError("ssm_state_indices", fmt::format("entry {} repeats slot {}", i, slot));
    }
    used[static_cast<std::size_t>(slot)] = true;
  }
}

} // namespace

void validate_prefill_call(const PrefillInputs& inputs, const PrefillOptions& options,
                           std::span<const SequenceRange> sequences) {
  if (inputs.heads < 1) {
    throw TensorError("q", fmt::format("head count must be at least 1, got {}", inputs.heads));
  }
  const std::int64_t elements = inputs.batch * inputs.tokens * inputs.heads * k_head_dim;
  expect_size("q", inputs.q.size(), elements, "[B, T, H, 128]");
  expect_size("k", inputs.k.size(), elements, "[B, T, H, 128]");
  expect_size("v", inputs.v.size(), elements, "[B, T, H, 128]");
  expect_size("g", inputs.g.size(), elements, "[B, T, H, 128]");
  validate_beta(inputs);
  expect_size("A_log", inputs.a_log.size(), inputs.heads, "[H]");
  expect_size("dt_bias", inputs.dt_bias.size(), inputs.heads * k_head_dim, "[H * 128]");
  if (!std::isfinite(options.scale)) {
    throw TensorError("scale", fmt::format("must be finite, got {}", options.scale));
  }
  if (options.lower_bound && !(std::isfinite(*options.lower_bound) && *options.lower_bound < 0.0)) {
    throw TensorError("lower_bound", fmt::format("must be finite and negative, got {}", *options.lower_bound));
  }
  validate_state(inputs, sequences);
}

} // namespace kda::reference
