#include "reference/chunk_operands.hpp"

#include "compiler/errors.hpp"
#include "reference/gate.hpp"

#include <algorithm>
#include <cmath>

namespace kda::reference {
namespace {

double dot_row(const Matrix& a, std::int64_t i, const Matrix& b, std::int64_t j) {
  double sum = 0.0;
  for (std::int64_t k = 0; k < a.cols; ++k) {
    sum += a(i, k) * b(j, k);
  }
  return sum;
}

// Loads the chunk's rows (padding with zeros), G, G_tot and gamma.
void load_rows(const HeadTokens& tokens, std::int64_t begin, ChunkOperands& ops, Matrix& q_hat, Matrix& k_hat) {
  const std::int64_t c = ops.size;
  std::vector<double> running(static_cast<std::size_t>(k_head_dim), 0.0);
  for (std::int64_t i = 0; i < c; ++i) {
    if (i < ops.valid_rows) {
      const PreparedToken token = tokens.token(begin + i);
      ops.beta[static_cast<std::size_t>(i)] = token.beta;
      for (std::int64_t k = 0; k < k_head_dim; ++k) {
        const auto kk = static_cast<std::size_t>(k);
        q_hat(i, k) = token.q_hat[kk];
        k_hat(i, k) = token.k_hat[kk];
        ops.v(i, k) = token.v[kk];
        running[kk] += token.log_decay[kk] * k_log2e;
      }
    }
    for (std::int64_t k = 0; k < k_head_dim; ++k) {
      ops.g(i, k) = running[static_cast<std::size_t>(k)];
    }
  }
  ops.g_total = running;
  for (std::size_t k = 0; k < running.size(); ++k) {
    ops.gamma[k] = std::exp2(running[k]);
  }
}

} // namespace

InverseScheme ChunkConfig::inverse_scheme() const {
  if (inverse) {
    return *inverse;
  }
  return chunk_size == 16 ? InverseScheme::neumann : InverseScheme::blocked;
}

double chunk_anchor(const ChunkConfig& config, std::optional<double> lower_bound) {
  if (!config.anchored) {
    return 0.0;
  }
  KDA_INTERNAL_ASSERT(lower_bound.has_value(), "the anchored chunked algorithm needs a lower bound");
  return static_cast<double>(config.chunk_size / 2) * (*lower_bound * k_log2e);
}

ChunkOperands prepare_chunk(const HeadTokens& tokens, std::int64_t begin, double scale, const ChunkConfig& config) {
  const std::int64_t c = config.chunk_size;
  KDA_INTERNAL_ASSERT(begin >= 0 && begin < tokens.length(), "chunk starts outside the sequence");
  ChunkOperands ops;
  ops.size = c;
  ops.valid_rows = std::min(c, tokens.length() - begin);
  ops.anchor = chunk_anchor(config, tokens.lower_bound());
  ops.g = Matrix(c, k_head_dim);
  ops.gamma.assign(static_cast<std::size_t>(k_head_dim), 0.0);
  ops.beta.assign(static_cast<std::size_t>(c), 0.0);
  ops.v = Matrix(c, k_head_dim);
  Matrix q_hat(c, k_head_dim);
  Matrix k_hat(c, k_head_dim);
  load_rows(tokens, begin, ops, q_hat, k_hat);

  const double anchor = ops.anchor;
  ops.kd_exponent = Matrix(c, k_head_dim);
  ops.ki_exponent = Matrix(c, k_head_dim);
  ops.kd_anchored = Matrix(c, k_head_dim);
  ops.qd_anchored = Matrix(c, k_head_dim);
  ops.ki = Matrix(c, k_head_dim);
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t k = 0; k < k_head_dim; ++k) {
      ops.kd_exponent(i, k) = ops.g(i, k) - anchor;
      ops.ki_exponent(i, k) = anchor - ops.g(i, k);
      const double down = std::exp2(ops.kd_exponent(i, k));
      ops.kd_anchored(i, k) = k_hat(i, k) * down;
      ops.qd_anchored(i, k) = scale * q_hat(i, k) * down;
      ops.ki(i, k) = k_hat(i, k) * std::exp2(ops.ki_exponent(i, k));
    }
  }

  ops.rounding = config.rounding;
  const RoundingPoints* r = config.rounding ? &*config.rounding : nullptr;
  if (r != nullptr && r->has("beta")) {
    for (double& b : ops.beta) {
      b = round_to_bf16(b);
    }
  }
  // Kr is formed from Ki before Ki's own rounding point (the prepare kernels
  // scale Ki in fp32; its bf16 copy is only an operand of L and Mqk).
  Matrix ki_unrounded = ops.ki;
  if (r != nullptr) {
    round_to_fp32(ki_unrounded);
    for (auto [point, m] : {std::pair{"kd_anchored", &ops.kd_anchored}, std::pair{"qd_anchored", &ops.qd_anchored},
                            std::pair{"ki", &ops.ki}}) {
      round_to_fp32(*m);
      if (r->has(point)) {
        round_to_bf16(*m);
      }
    }
  }

  // Selection, not multiplication by a 0/1 mask: masked products may overflow.
  ops.l = Matrix(c, c);
  ops.mqk = Matrix(c, c);
  for (std::int64_t i = 0; i < c; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      if (j < i) {
        ops.l(i, j) = ops.beta[static_cast<std::size_t>(i)] * dot_row(ops.kd_anchored, i, ops.ki, j);
      }
      ops.mqk(i, j) = dot_row(ops.qd_anchored, i, ops.ki, j);
    }
    if (config.mqk_diagonal_from_raw_rows) { // the anchor factors cancel exactly on the diagonal
      ops.mqk(i, i) = scale * dot_row(q_hat, i, k_hat, i);
    }
  }
  if (r != nullptr) {
    round_to_fp32(ops.l);
    round_to_fp32(ops.mqk);
    if (r->has("lmat")) {
      round_to_bf16(ops.l);
    }
    if (r->has("mqk")) {
      round_to_bf16(ops.mqk);
    }
  }
  ops.t = invert_unit_lower(ops.l, config.inverse_scheme(), config.inverse_block,
                            r != nullptr && r->has("inverse_merge"));
  if (r != nullptr) {
    round_to_fp32(ops.t);
    if (r->has("tinv")) {
      round_to_bf16(ops.t);
    }
  }

  // Restore the true decay factors.
  const double restore = std::exp2(anchor);
  ops.kd = ops.kd_anchored;
  ops.qd = ops.qd_anchored;
  for (std::size_t i = 0; i < ops.kd.values.size(); ++i) {
    ops.kd.values[i] *= restore;
    ops.qd.values[i] *= restore;
  }
  ops.kr_exponent.resize(static_cast<std::size_t>(k_head_dim));
  for (std::size_t k = 0; k < ops.kr_exponent.size(); ++k) {
    ops.kr_exponent[k] = ops.g_total[k] - anchor;
  }
  ops.kr = ki_unrounded;
  for (std::int64_t j = 0; j < c; ++j) {
    for (std::int64_t k = 0; k < k_head_dim; ++k) {
      ops.kr(j, k) *= std::exp2(ops.kr_exponent[static_cast<std::size_t>(k)]);
    }
  }
  if (r != nullptr) {
    for (auto [point, m] : {std::pair{"kd", &ops.kd}, std::pair{"qd", &ops.qd}, std::pair{"kr", &ops.kr}}) {
      round_to_fp32(*m);
      if (r->has(point)) {
        round_to_bf16(*m);
      }
    }
  }
  return ops;
}

} // namespace kda::reference
