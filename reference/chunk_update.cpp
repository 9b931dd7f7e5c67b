#include "reference/chunk_update.hpp"

#include "compiler/errors.hpp"

namespace kda::reference {
namespace {

Matrix state_matrix(std::span<const double> state) {
  KDA_INTERNAL_ASSERT(state.size() == static_cast<std::size_t>(k_state_elements), "state must be 128 x 128");
  Matrix s(k_head_dim, k_head_dim);
  std::copy(state.begin(), state.end(), s.values.begin());
  return s;
}

} // namespace

ChunkCarriers compute_chunk_carriers(const ChunkOperands& ops, std::span<const double> state) {
  const RoundingPoints* r = ops.rounding ? &*ops.rounding : nullptr;
  Matrix s0 = state_matrix(state);
  if (r != nullptr && r->has("state_snapshot")) {
    round_to_bf16(s0);
  }
  ChunkCarriers carriers;
  carriers.p = multiply_transposed(ops.kd, s0);
  carriers.o0 = multiply_transposed(ops.qd, s0);
  if (r != nullptr) {
    round_to_fp32(carriers.p);
    round_to_fp32(carriers.o0);
    if (r->has("prediction")) {
      round_to_bf16(carriers.p);
    }
  }
  carriers.delta = Matrix(ops.size, k_head_dim);
  for (std::int64_t i = 0; i < ops.size; ++i) {
    const double beta = ops.beta[static_cast<std::size_t>(i)];
    for (std::int64_t v = 0; v < k_head_dim; ++v) {
      carriers.delta(i, v) = beta * (ops.v(i, v) - carriers.p(i, v));
    }
  }
  if (r != nullptr) {
    round_to_fp32(carriers.delta);
    if (r->has("delta")) {
      round_to_bf16(carriers.delta);
    }
  }
  carriers.u = multiply(ops.t, carriers.delta);
  if (r != nullptr) {
    round_to_fp32(carriers.u);
    if (r->has("u")) {
      round_to_bf16(carriers.u);
    }
  }
  return carriers;
}

void apply_fused_update(const ChunkOperands& ops, const ChunkCarriers& carriers, std::span<double> state,
                        std::span<double> output) {
  const std::int64_t c = ops.size;
  const std::int64_t n = k_head_dim + c;
  KDA_INTERNAL_ASSERT(output.size() == static_cast<std::size_t>(ops.valid_rows * k_head_dim),
                      "output must hold the chunk's valid rows");
  // Accumulator [S0 Diag(gamma) | O0^T] (128 x (128 + C)).
  Matrix accumulator(k_head_dim, n);
  for (std::int64_t v = 0; v < k_head_dim; ++v) {
    for (std::int64_t k = 0; k < k_head_dim; ++k) {
      accumulator(v, k) = state[static_cast<std::size_t>(v * k_head_dim + k)] * ops.gamma[static_cast<std::size_t>(k)];
    }
    for (std::int64_t i = 0; i < c; ++i) {
      accumulator(v, k_head_dim + i) = carriers.o0(i, v);
    }
  }
  // Right operand [Kr | Mqk^T] (C x (128 + C)).
  Matrix right(c, n);
  for (std::int64_t j = 0; j < c; ++j) {
    for (std::int64_t k = 0; k < k_head_dim; ++k) {
      right(j, k) = ops.kr(j, k);
    }
    for (std::int64_t i = 0; i < c; ++i) {
      right(j, k_head_dim + i) = ops.mqk(i, j);
    }
  }
  const RoundingPoints* r = ops.rounding ? &*ops.rounding : nullptr;
  // A design that folds the solve into the operand multiplies Delta^T by
  // T^T [Kr | Mqk^T] instead of U^T by [Kr | Mqk^T] (the same product).
  const bool folded = r != nullptr && r->has("upd");
  const Matrix* left = &carriers.u;
  Matrix folded_right;
  if (folded) {
    folded_right = Matrix(c, n);
    for (std::int64_t i = 0; i < c; ++i) {
      for (std::int64_t col = 0; col < n; ++col) {
        double sum = 0.0;
        for (std::int64_t j = 0; j < c; ++j) {
          sum += ops.t(j, i) * right(j, col);
        }
        folded_right(i, col) = round_to_bf16(round_to_fp32(sum));
      }
    }
    right = folded_right;
    left = &carriers.delta;
  }
  if (r != nullptr) {
    round_to_fp32(accumulator);
  }
  // accumulator += left^T * right, as one product.
  for (std::int64_t v = 0; v < k_head_dim; ++v) {
    for (std::int64_t j = 0; j < c; ++j) {
      const double u = (*left)(j, v);
      for (std::int64_t col = 0; col < n; ++col) {
        accumulator(v, col) += u * right(j, col);
      }
    }
  }
  if (r != nullptr) {
    round_to_fp32(accumulator); // the fp32 state and output accumulators
    if (r->has("output")) {
      for (std::int64_t v = 0; v < k_head_dim; ++v) {
        for (std::int64_t i = 0; i < c; ++i) {
          accumulator(v, k_head_dim + i) = round_to_bf16(accumulator(v, k_head_dim + i));
        }
      }
    }
  }
  for (std::int64_t v = 0; v < k_head_dim; ++v) {
    for (std::int64_t k = 0; k < k_head_dim; ++k) {
      state[static_cast<std::size_t>(v * k_head_dim + k)] = accumulator(v, k);
    }
    for (std::int64_t i = 0; i < ops.valid_rows; ++i) {
      output[static_cast<std::size_t>(i * k_head_dim + v)] = accumulator(v, k_head_dim + i);
    }
  }
}

} // namespace kda::reference
