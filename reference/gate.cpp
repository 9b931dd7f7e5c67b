#include "reference/gate.hpp"

#include "compiler/errors.hpp"

#include <cmath>

namespace kda::reference {

double sigmoid(double x) {
  if (x >= 0.0) {
    return 1.0 / (1.0 + std::exp(-x));
  }
  const double e = std::exp(x);
  return e / (1.0 + e);
}

double softplus(double y) {
  return y > 20.0 ? y : std::log1p(std::exp(y));
}

double safe_gate(double g, double a_log, double dt_bias, double lower_bound) {
  return lower_bound * sigmoid(std::exp(a_log) * (g + dt_bias));
}

double unbounded_gate(double g, double a_log, double dt_bias) {
  return -std::exp(a_log) * softplus(g + dt_bias);
}

double gate_log_decay(double g, double a_log, double dt_bias, std::optional<double> lower_bound) {
  return lower_bound ? safe_gate(g, a_log, dt_bias, *lower_bound) : unbounded_gate(g, a_log, dt_bias);
}

void l2_normalize(std::span<const double> x, std::span<double> out) {
  KDA_INTERNAL_ASSERT(x.size() == out.size(), "l2_normalize needs equal sizes");
  double sum = 0.0;
  for (double value : x) {
    sum += value * value;
  }
  const double inv = 1.0 / std::sqrt(sum + k_l2norm_eps);
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = x[i] * inv;
  }
}

} // namespace kda::reference
