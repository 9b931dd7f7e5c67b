/* kdajit C API: recurrent KDA prefill for FFI callers.
 *
 * Every function returns a kda_status; on failure kda_last_error() gives the
 * message for the calling thread (valid until its next kdajit call). No
 * exception crosses this boundary. Tensors are device pointers with dtype,
 * shape and strides in elements (strides all zero = contiguous). Buffers that
 * kdajit allocates are returned as kda_buffer handles and must be released
 * with kda_buffer_release (stream-ordered on the call's stream). */
#ifndef KDAJIT_KDA_C_H
#define KDAJIT_KDA_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  KDA_OK = 0,
  KDA_ERROR_TENSOR = 1,    /* a bad argument: see kda_last_error() */
  KDA_ERROR_SCHEDULE = 2,  /* a schedule failed to parse, validate or lower */
  KDA_ERROR_TOOLCHAIN = 3, /* NVRTC or the driver failed (or no driver) */
  KDA_ERROR_CACHE = 4,     /* cache I/O failed */
  KDA_ERROR_INTERNAL = 5   /* a bug in kdajit */
} kda_status;

typedef enum { KDA_BF16 = 0, KDA_FP32 = 1, KDA_INT32 = 2, KDA_INT64 = 3 } kda_dtype;

typedef struct {
  const void* data; /* device pointer; NULL = not given */
  kda_dtype dtype;
  int32_t rank;     /* 0..4 */
  int64_t shape[4];
  int64_t strides[4]; /* elements; all 0 = contiguous */
} kda_tensor;

typedef struct {
  kda_tensor q, k, v, g, beta, a_log, dt_bias;
  double scale;
  double lower_bound;
  kda_tensor initial_state; /* optional, updated in place */
  int32_t output_final_state;
  kda_tensor cu_seqlens;    /* optional: packed layout */
  kda_tensor out;           /* optional: allocated when not given */
  kda_tensor final_state;   /* optional: allocated when needed and not given */
  void* stream;             /* CUstream */
  const char* schedule;     /* optional: force a schedule by name */
  const char* family;       /* optional: "warp_mma", "wgmma" or "tcgen05": choose only among that family */
} kda_prefill_args;

typedef struct kda_buffer_s* kda_buffer;

/* Fills *args with empty tensors, scale 1/sqrt(128), lower_bound -5. */
void kda_prefill_args_init(kda_prefill_args* args);

/* Runs the prefill. out_ptr / final_state_ptr (may be NULL) receive the output
 * and final-state device pointers; out_buffer / final_state_buffer (may be
 * NULL only when the caller provides the corresponding tensor) receive handles
 * to memory kdajit allocated (NULL when nothing was allocated). */
kda_status kda_recurrent_prefill(const kda_prefill_args* args, void** out_ptr, void** final_state_ptr,
                                 kda_buffer* out_buffer, kda_buffer* final_state_buffer);

/* Frees a buffer kdajit allocated (NULL is ignored). */
void kda_buffer_release(kda_buffer buffer);

/* Device pointer of a buffer. */
void* kda_buffer_data(kda_buffer buffer);

/* The last error message of the calling thread ("" when none). */
const char* kda_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KDAJIT_KDA_C_H */
