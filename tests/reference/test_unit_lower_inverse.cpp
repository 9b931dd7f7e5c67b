// T = (I + L)^-1 by the Neumann product and the blocked 8 -> 16 -> 32 scheme,
// against forward substitution.
#include "reference/chunk_operands.hpp"
#include "reference/unit_lower_inverse.hpp"
#include "reference_problem.hpp"

#include "compiler/errors.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace kda::reference;
using namespace kda::reference::testing;

namespace {

Matrix random_strict_lower(std::int64_t n, double magnitude, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-magnitude, magnitude);
  Matrix l(n, n, std::numeric_limits<double>::quiet_NaN()); // the upper triangle must never be read
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < i; ++j) {
      l(i, j) = uniform(rng);
    }
  }
  return l;
}

// max |T (I + L) - I|, reading only the strict lower triangle of L.
double identity_residual(const Matrix& t, const Matrix& l) {
  Matrix unit = Matrix::identity(l.rows);
  for (std::int64_t i = 0; i < l.rows; ++i) {
    for (std::int64_t j = 0; j < i; ++j) {
      unit(i, j) = l(i, j);
    }
  }
  return max_abs_difference(multiply(t, unit), Matrix::identity(l.rows));
}

double max_abs(const Matrix& m) {
  double worst = 0.0;
  for (double x : m.values) {
    worst = std::max(worst, std::abs(x));
  }
  return worst;
}

void check_schemes(const Matrix& l) {
  const Matrix reference = invert_unit_lower_forward(l);
  CHECK(identity_residual(reference, l) <= 1e-12 * std::max(1.0, max_abs(reference)));
  for (const InverseScheme scheme : {InverseScheme::neumann, InverseScheme::blocked}) {
    CAPTURE(scheme == InverseScheme::neumann);
    const Matrix t = invert_unit_lower(l, scheme);
    CHECK(identity_residual(t, l) <= 1e-12 * std::max(1.0, max_abs(t)));
    CHECK(max_abs_difference(t, reference) <= 1e-12 * std::max(1.0, max_abs(reference)));
    for (std::int64_t i = 0; i < l.rows; ++i) { // unit lower triangular
      CHECK(t(i, i) == 1.0);
      for (std::int64_t j = i + 1; j < l.cols; ++j) {
        CHECK(t(i, j) == 0.0);
      }
    }
  }
}

} // namespace

TEST_CASE("both inverse schemes invert random unit lower matrices", "[reference][inverse]") {
  std::mt19937_64 rng(801);
  for (const std::int64_t n : {8, 16, 32, 64}) {
    for (const double magnitude : {0.1, 0.5}) {
      CAPTURE(n, magnitude);
      check_schemes(random_strict_lower(n, magnitude, rng));
    }
  }
}

TEST_CASE("both inverse schemes invert the L of real chunks", "[reference][inverse]") {
  for (const GateDistribution gate : {GateDistribution::standard, GateDistribution::all_minus_8,
                                      GateDistribution::all_plus_8, GateDistribution::bias_uniform_8}) {
    RandomProblem problem(ProblemSpec{1, 32, 1, {}, gate, 0}, 811 + static_cast<std::uint64_t>(gate));
    // Similar keys make L large: add a shared direction to every key.
    for (std::size_t i = 0; i < problem.k.size(); ++i) {
      problem.k[i] = kda::float_to_bf16(kda::bf16_to_float(problem.k[i]) + (i % 128 < 8 ? 3.0f : 0.0f));
    }
    const PrefillInputs inputs = problem.inputs();
    const HeadTokens tokens(inputs, -5.0, SequenceRange{0, 32}, 0);
    for (const ChunkConfig& config : {ChunkConfig::unanchored_16(), ChunkConfig::anchored_32()}) {
      CAPTURE(static_cast<int>(gate), config.chunk_size);
      check_schemes(prepare_chunk(tokens, 0, 0.1, config).l);
    }
  }
}

TEST_CASE("the blocked inverse with 16 x 16 diagonal blocks (the wgmma chunk-32 kernel's)", "[reference][inverse]") {
  std::mt19937_64 rng(803);
  for (const std::int64_t n : {16, 32, 64}) {
    const Matrix l = random_strict_lower(n, 0.5, rng);
    const Matrix reference = invert_unit_lower_forward(l);
    const Matrix t = invert_unit_lower(l, InverseScheme::blocked, 16);
    CAPTURE(n);
    CHECK(identity_residual(t, l) <= 1e-12 * std::max(1.0, max_abs(t)));
    CHECK(max_abs_difference(t, reference) <= 1e-12 * std::max(1.0, max_abs(reference)));
  }
  CHECK_THROWS_AS(invert_unit_lower_blocked(random_strict_lower(48, 0.5, rng), 16), kda::InternalError);
}

// The fused tcgen05 designs merge with bf16 mma.sync: the emulation rounds
// each merge's operands (L21, T11, T22, X = L21 T11) to bf16. The result still
// inverts to bf16 accuracy, departs from the exact inverse by about bf16's
// resolution, and keeps the diagonal blocks (fp32 forward substitution) exact.
TEST_CASE("the blocked inverse with bf16 merge operands (the fused tcgen05 kernels')", "[reference][inverse]") {
  std::mt19937_64 rng(805);
  for (const std::int64_t n : {16, 32}) {
    const Matrix l = random_strict_lower(n, 0.3, rng);
    const Matrix exact = invert_unit_lower_forward(l);
    const Matrix t = invert_unit_lower(l, InverseScheme::blocked, 8, true);
    CAPTURE(n);
    const double departure = max_abs_difference(t, exact);
    CHECK(departure > 1e-6);
    CHECK(departure <= 2e-2 * std::max(1.0, max_abs(exact)));
    CHECK(identity_residual(t, l) <= 2e-2);
    for (std::int64_t b = 0; b < n / 8; ++b) {
      for (std::int64_t i = 0; i < 8; ++i) {
        for (std::int64_t j = 0; j <= i; ++j) {
          CHECK(std::abs(t(8 * b + i, 8 * b + j) - exact(8 * b + i, 8 * b + j)) <= 1e-12);
        }
      }
    }
  }
}
