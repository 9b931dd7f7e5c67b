#include "reference/gate.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>

using namespace kda::reference;

TEST_CASE("sigmoid and softplus are stable at the extremes", "[reference][gate]") {
  CHECK(sigmoid(0.0) == 0.5);
  CHECK(sigmoid(-800.0) >= 0.0);
  CHECK(sigmoid(800.0) == 1.0);
  CHECK(sigmoid(-3.0) == Approx(1.0 / (1.0 + std::exp(3.0))).epsilon(1e-15));
  CHECK(softplus(0.0) == Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(softplus(-50.0) == Approx(std::exp(-50.0)).epsilon(1e-12));
  CHECK(softplus(20.5) == 20.5); // FLA's threshold: y itself above 20
  CHECK(softplus(19.0) == Approx(std::log1p(std::exp(19.0))).epsilon(1e-15));
}

TEST_CASE("the two gates follow their formulas", "[reference][gate]") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> uniform(-4.0, 4.0);
  for (int i = 0; i < 100; ++i) {
    const double g = uniform(rng);
    const double a_log = uniform(rng) / 4.0;
    const double bias = uniform(rng);
    const double x = std::exp(a_log) * (g + bias);
    const double safe = safe_gate(g, a_log, bias, -5.0);
    CHECK(safe == Approx(-5.0 / (1.0 + std::exp(-x))).epsilon(1e-14));
    CHECK(safe > -5.0);
    CHECK(safe < 0.0);
    const double free_gate = unbounded_gate(g, a_log, bias);
    CHECK(free_gate == Approx(-std::exp(a_log) * std::log1p(std::exp(g + bias))).epsilon(1e-14));
    CHECK(gate_log_decay(g, a_log, bias, -5.0) == safe);
    CHECK(gate_log_decay(g, a_log, bias, std::nullopt) == free_gate);
  }
}

TEST_CASE("l2_normalize keeps eps inside the square root", "[reference][gate]") {
  const std::array<double, 2> x{3.0, 4.0};
  std::array<double, 2> out{};
  l2_normalize(x, out);
  CHECK(out[0] == 3.0 / std::sqrt(25.0 + 1e-6));
  CHECK(out[1] == 4.0 / std::sqrt(25.0 + 1e-6));
  const std::array<double, 2> zero{0.0, 0.0};
  l2_normalize(zero, out);
  CHECK(out[0] == 0.0); // no division by zero for a zero row
}
