/// \file
/// Scalar pieces of the per-token preprocessing (spec 1.2), all in fp64:
/// sigmoid, softplus, the two gates and the L2 norm with eps inside the root.
#pragma once

#include <optional>
#include <span>

namespace kda::reference {

constexpr double k_log2e = 1.4426950408889634;
constexpr double k_l2norm_eps = 1e-6;

/// 1 / (1 + e^-x), evaluated without overflow for either sign of x.
double sigmoid(double x);

/// ln(1 + e^y), and y itself for y > 20 (as FLA does).
double softplus(double y);

/// Natural-log decay of the safe gate: lb * sigmoid(exp(a_log) * (g + dt_bias)), in (lb, 0).
double safe_gate(double g, double a_log, double dt_bias, double lower_bound);

/// Natural-log decay without lower bound: -exp(a_log) * softplus(g + dt_bias).
double unbounded_gate(double g, double a_log, double dt_bias);

/// The gate in force: safe_gate when a lower bound is given, else unbounded_gate.
double gate_log_decay(double g, double a_log, double dt_bias, std::optional<double> lower_bound);

/// out = x / sqrt(sum(x^2) + 1e-6); `out` may alias `x`.
void l2_normalize(std::span<const double> x, std::span<double> out);

} // namespace kda::reference
