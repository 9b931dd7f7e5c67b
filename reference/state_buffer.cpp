#include "reference/prefill_inputs.hpp"
#include "reference/prefill_result.hpp"

#include <limits>

namespace kda::reference {

double StateBuffer::load(std::size_t index) const {
  if (m_dtype == StateDtype::bf16) {
    return static_cast<double>(bf16_to_float(m_bf16[index]));
  }
  return static_cast<double>(m_fp32[index]);
}

void StateBuffer::store(std::size_t index, double value) const {
  if (m_dtype == StateDtype::bf16) {
    m_bf16[index] = float_to_bf16(static_cast<float>(value));
  } else {
    m_fp32[index] = static_cast<float>(value);
  }
}

OwnedState OwnedState::poisoned(StateDtype dtype, std::int64_t slots, std::int64_t heads) {
  OwnedState state;
  state.dtype = dtype;
  const auto count = static_cast<std::size_t>(slots * heads * k_state_elements);
  if (dtype == StateDtype::bf16) {
    state.bf16.assign(count, Bf16{0x7fc0});
  } else {
    state.fp32.assign(count, std::numeric_limits<float>::quiet_NaN());
  }
  return state;
}

StateBuffer OwnedState::view(std::int64_t slots) {
  if (dtype == StateDtype::bf16) {
    return StateBuffer(std::span<Bf16>(bf16), slots);
  }
  return StateBuffer(std::span<float>(fp32), slots);
}

double OwnedState::load(std::size_t index) const {
  return dtype == StateDtype::bf16 ? static_cast<double>(bf16_to_float(bf16[index])) : static_cast<double>(fp32[index]);
}

std::vector<Bf16> round_values_to_bf16(std::span<const double> values) {
  std::vector<Bf16> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    out[i] = float_to_bf16(static_cast<float>(values[i]));
  }
  return out;
}

} // namespace kda::reference
