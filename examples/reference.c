#include "reference.h"

#include <math.h>
#include <string.h>

static double sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}

static void l2_normalise(const float* x, double* y) {
  double sum = 0.0;
  for (int i = 0; i < EXAMPLE_D; ++i) {
    sum += (double)x[i] * x[i];
  }
  const double r = 1.0 / sqrt(sum + 1e-6);
  for (int i = 0; i < EXAMPLE_D; ++i) {
    y[i] = x[i] * r;
  }
}

void example_reference(int64_t T, int64_t H, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, const float* a_log, const float* dt_bias, double scale, double lower_bound,
                       double* state, double* out) {
  double qn[EXAMPLE_D], kn[EXAMPLE_D], decay[EXAMPLE_D], u[EXAMPLE_D];
  for (int64_t h = 0; h < H; ++h) {
    double* S = state + h * EXAMPLE_D * EXAMPLE_D;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = (t * H + h) * EXAMPLE_D;
      l2_normalise(q + row, qn);
      l2_normalise(k + row, kn);
      for (int c = 0; c < EXAMPLE_D; ++c) {
        const double x = exp((double)a_log[h]) * ((double)g[row + c] + dt_bias[h * EXAMPLE_D + c]);
        decay[c] = exp(lower_bound * sigmoid(x));
      }
      const double b = sigmoid(beta[t * H + h]);
      for (int r = 0; r < EXAMPLE_D; ++r) {
        double p = 0.0;
        for (int c = 0; c < EXAMPLE_D; ++c) {
          S[r * EXAMPLE_D + c] *= decay[c];
          p += S[r * EXAMPLE_D + c] * kn[c];
        }
        u[r] = b * ((double)v[row + r] - p);
      }
      for (int r = 0; r < EXAMPLE_D; ++r) {
        double o = 0.0;
        for (int c = 0; c < EXAMPLE_D; ++c) {
          S[r * EXAMPLE_D + c] += u[r] * kn[c];
          o += S[r * EXAMPLE_D + c] * qn[c];
        }
        out[row + r] = scale * o;
      }
    }
  }
}

uint16_t example_to_bf16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

float example_from_bf16(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

double example_relative_rms(const float* x, const double* ref, int64_t n) {
  double err = 0.0, norm = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    err += (x[i] - ref[i]) * (x[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return sqrt(err / (norm > 0.0 ? norm : 1.0));
}
