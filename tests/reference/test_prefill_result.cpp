#include "reference/prefill_result.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace kda::reference;

TEST_CASE("round_values_to_bf16 rounds to nearest even", "[reference][result]") {
  const std::vector<double> values{1.0, 1.0 + 1.0 / 256.0, 1.0 + 3.0 / 256.0, -2.5, 1e-3};
  const std::vector<kda::Bf16> rounded = round_values_to_bf16(values);
  REQUIRE(rounded.size() == values.size());
  CHECK(rounded[0].bits == 0x3f80);
  CHECK(rounded[1].bits == 0x3f80); // halfway: to even
  CHECK(rounded[2].bits == 0x3f82); // halfway: to even (up)
  CHECK(kda::bf16_to_float(rounded[3]) == -2.5f);
  CHECK(std::abs(kda::bf16_to_float(rounded[4]) - 1e-3f) <= 1e-3f / 256.0f);
}

TEST_CASE("poisoned states are NaN everywhere and index as [slot, H, V, K]", "[reference][result]") {
  for (const StateDtype dtype : {StateDtype::bf16, StateDtype::fp32}) {
    OwnedState state = OwnedState::poisoned(dtype, 2, 3);
    const std::size_t count = static_cast<std::size_t>(2 * 3 * k_state_elements);
    CHECK((dtype == StateDtype::bf16 ? state.bf16.size() : state.fp32.size()) == count);
    for (std::size_t i = 0; i < count; i += 997) {
      CHECK(std::isnan(state.load(i)));
    }
    const StateBuffer view = state.view(2);
    view.store(state_index(1, 2, 3, 5, 7), 0.75);
    CHECK(state.load(((1 * 3 + 2) * 128 + 5) * 128 + 7) == 0.75);
  }
}
