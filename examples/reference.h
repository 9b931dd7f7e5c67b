/* The operator on the CPU in double precision, token by token (the spec's
 * definition, docs/reference.md): per head an L2-normalised q and k, the safe
 * gate a = lower_bound * sigmoid(exp(A_log) (g + dt_bias)), beta = sigmoid,
 * then S = S diag(exp a); u = beta (v - S k); S += u k^T; o = scale S q.
 * Inputs are the bf16 values the GPU reads, as floats. The examples compare
 * kdajit's output with it. */
#ifndef KDAJIT_EXAMPLE_REFERENCE_H
#define KDAJIT_EXAMPLE_REFERENCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { EXAMPLE_D = 128 };

/* One sequence of T tokens, H heads, [T,H,128] rows (beta [T,H]); state
 * [H,128,128] (value row, key column), updated in place; out [T,H,128]. */
void example_reference(int64_t T, int64_t H, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, const float* a_log, const float* dt_bias, double scale, double lower_bound,
                       double* state, double* out);

/* Round to bf16 (nearest even) and back; the bf16 bits. */
uint16_t example_to_bf16(float x);
float example_from_bf16(uint16_t b);

/* sqrt(sum (x - ref)^2 / sum ref^2) over n values. */
double example_relative_rms(const float* x, const double* ref, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
