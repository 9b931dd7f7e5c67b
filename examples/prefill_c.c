/* kdajit from C: one fixed-layout call (kda_recurrent_prefill) with a bf16
 * state updated in place, then the same call planned (kda_plan_create) and
 * run with a caller-owned workspace, checked against a double-precision CPU
 * reference. Tensors are allocated with the CUDA driver API.
 *
 *   build: examples/CMakeLists.txt, or
 *          cc prefill_c.c reference.c $(pkg-config --cflags --libs kdajit) -I<cuda>/include -lcuda -lm
 *   run:   ./prefill_c */
#include "kdajit/kda_c.h"
#include "reference.h"

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, T = 192, H = 2, D = EXAMPLE_D };

static void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "%s failed: CUresult %d\n", what, (int)r);
    exit(2);
  }
}

static CUdeviceptr upload(const void* host, size_t bytes) {
  CUdeviceptr p = 0;
  check(cuMemAlloc(&p, bytes), "cuMemAlloc");
  check(cuMemcpyHtoD(p, host, bytes), "cuMemcpyHtoD");
  return p;
}

static kda_tensor tensor(CUdeviceptr p, kda_dtype dtype, int rank, const int64_t* shape) {
  kda_tensor t;
  memset(&t, 0, sizeof t);
  t.data = (const void*)p;
  t.dtype = dtype;
  t.rank = rank;
  for (int i = 0; i < rank; ++i) {
    t.shape[i] = shape[i];
  }
  return t;
}

static unsigned g_seed = 7;
static float uniform(void) {
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)(g_seed >> 8) / 8388608.0f - 1.0f;
}

/* The device array's bytes, after the context has finished its work. */
static void* download(CUdeviceptr p, size_t bytes) {
  void* host = malloc(bytes);
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  check(cuMemcpyDtoH(host, p, bytes), "cuMemcpyDtoH");
  return host;
}

/* n random bf16 values: the bits and, in `values`, what they are. */
static uint16_t* bf16_random(size_t n, float amplitude, float* values) {
  uint16_t* bits = malloc(n * sizeof *bits);
  for (size_t i = 0; i < n; ++i) {
    bits[i] = example_to_bf16(amplitude * uniform());
    values[i] = example_from_bf16(bits[i]);
  }
  return bits;
}

int main(void) {
  const size_t rows = (size_t)B * T * H * D, state_elems = (size_t)B * H * D * D;
  CUdevice device;
  CUcontext context;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  float* q = malloc(rows * sizeof *q);
  float* k = malloc(rows * sizeof *k);
  float* v = malloc(rows * sizeof *v);
  float* g = malloc(rows * sizeof *g);
  float* beta = malloc((size_t)B * T * H * sizeof *beta);
  float* state0 = malloc(state_elems * sizeof *state0);
  float a_log[H], dt_bias[H * D];
  uint16_t* bits[5] = {bf16_random(rows, 1.0f, q), bf16_random(rows, 1.0f, k), bf16_random(rows, 1.0f, v),
                       bf16_random(rows, 2.0f, g), bf16_random((size_t)B * T * H, 2.0f, beta)};
  uint16_t* state_bits = bf16_random(state_elems, 0.1f, state0);
  for (int i = 0; i < H; ++i) a_log[i] = 0.5f * (uniform() + 1.0f);
  for (int i = 0; i < H * D; ++i) dt_bias[i] = 0.5f * (uniform() + 1.0f);

  const int64_t tokens[4] = {B, T, H, D}, betas[3] = {B, T, H}, heads[1] = {H}, bias[2] = {H, D};
  const int64_t states[4] = {B, H, D, D};
  CUdeviceptr out = 0;
  check(cuMemAlloc(&out, rows * 2), "cuMemAlloc");
  CUdeviceptr state = upload(state_bits, state_elems * 2);
  kda_prefill_args a;
  kda_prefill_args_init(&a);
  a.q = tensor(upload(bits[0], rows * 2), KDA_BF16, 4, tokens);
  a.k = tensor(upload(bits[1], rows * 2), KDA_BF16, 4, tokens);
  a.v = tensor(upload(bits[2], rows * 2), KDA_BF16, 4, tokens);
  a.g = tensor(upload(bits[3], rows * 2), KDA_BF16, 4, tokens);
  a.beta = tensor(upload(bits[4], (size_t)B * T * H * 2), KDA_BF16, 3, betas);
  a.a_log = tensor(upload(a_log, sizeof a_log), KDA_FP32, 1, heads);
  a.dt_bias = tensor(upload(dt_bias, sizeof dt_bias), KDA_FP32, 2, bias);
  a.initial_state = tensor(state, KDA_BF16, 4, states);
  a.out = tensor(out, KDA_BF16, 4, tokens);

  double* ref_state = malloc(state_elems * sizeof *ref_state);
  double* ref_out = malloc(rows * sizeof *ref_out);
  for (size_t i = 0; i < state_elems; ++i) ref_state[i] = state0[i];
  for (int b = 0; b < B; ++b) {
    const size_t first = (size_t)b * T * H * D;
    example_reference(T, H, q + first, k + first, v + first, g + first, beta + (size_t)b * T * H, a_log, dt_bias,
                      a.scale, a.lower_bound, ref_state + (size_t)b * H * D * D, ref_out + first);
  }

  if (kda_recurrent_prefill(&a, NULL, NULL, NULL, NULL) != KDA_OK) {
    fprintf(stderr, "kda_recurrent_prefill: %s\n", kda_last_error());
    return 1;
  }
  uint16_t* out_bits = download(out, rows * 2);
  uint16_t* state_after = download(state, state_elems * 2);
  float* out_values = malloc(rows * sizeof *out_values);
  float* state_values = malloc(state_elems * sizeof *state_values);
  for (size_t i = 0; i < rows; ++i) out_values[i] = example_from_bf16(out_bits[i]);
  for (size_t i = 0; i < state_elems; ++i) state_values[i] = example_from_bf16(state_after[i]);
  const double out_error = example_relative_rms(out_values, ref_out, (int64_t)rows);
  const double state_error = example_relative_rms(state_values, ref_state, (int64_t)state_elems);
  printf("kda_recurrent_prefill (kdajit %s): B %d x T %d, %d heads, bf16 state in place\n", kda_version(), B, T, H);
  printf("  relative RMS error against the fp64 reference: output %.2e, final state %.2e\n", out_error, state_error);

  /* Planned: the same signature from the same initial state. */
  check(cuMemcpyHtoD(state, state_bits, state_elems * 2), "cuMemcpyHtoD");
  kda_plan plan = NULL;
  int64_t workspace_bytes = 0;
  if (kda_plan_create(&a, &plan) != KDA_OK || kda_plan_workspace_bytes(plan, &workspace_bytes) != KDA_OK) {
    fprintf(stderr, "kda_plan_create: %s\n", kda_last_error());
    return 1;
  }
  CUdeviceptr workspace = 0;
  check(cuMemAlloc(&workspace, (size_t)workspace_bytes), "cuMemAlloc");
  if (kda_plan_run(plan, &a, (void*)workspace, workspace_bytes) != KDA_OK) {
    fprintf(stderr, "kda_plan_run: %s\n", kda_last_error());
    return 1;
  }
  uint16_t* planned_out = download(out, rows * 2);
  uint16_t* planned_state = download(state, state_elems * 2);
  const int same = memcmp(planned_out, out_bits, rows * 2) == 0 && memcmp(planned_state, state_after, state_elems * 2) == 0;
  printf("kda_plan_run (%lld-byte workspace): %s the eager call's output and state\n", (long long)workspace_bytes,
         same ? "the same bits as" : "DIFFERENT from");
  kda_plan_destroy(plan);
  const int ok = out_error <= 1e-2 && state_error <= 1e-2 && same;
  printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
