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

#include "kdajit/export.h"

#include <stddef.h>
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

/* The arguments of kda_recurrent_prefill. Initialise with
 * kda_prefill_args_init, which sets struct_size: the library reads only the
 * fields that fit in struct_size bytes (fields a caller built against an older
 * kdajit does not know read as absent) and refuses a struct_size larger than
 * its own (a caller built against a newer kdajit) or smaller than the first
 * version's. New fields are only ever appended. */
typedef struct {
  size_t struct_size;       /* sizeof(kda_prefill_args) as the caller was compiled */
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
  const char* family;       /* optional: "warp_mma", "wgmma", "tcgen05" or "token" (the LLVM tier): choose only among that family */
  /* Serving-engine fields (kdajit/prefill_args.hpp has their contract). */
  kda_tensor ssm_state_indices;    /* optional int32 [N]: initial_state is a pool, sequence i uses slot [i] */
  kda_tensor seq_order;            /* optional int32 [N], packed only: the order the kernels take the sequences */
  kda_tensor state_checkpoints;    /* bf16 [C,H,128,128] rows, with checkpoint_every_n_tokens */
  kda_tensor checkpoint_cu_starts; /* int64 [N+1]: first row of each sequence */
  int64_t checkpoint_every_n_tokens; /* 0: no checkpoints; else a positive multiple of 16 */
  int32_t prepare_overlap;           /* 1 (default): kda::PrefillOptions::prepare_overlap; 0: sequential */
  /* Tiered JIT (kda::PrefillOptions::tiered): -1 (default) KDAJIT_TIERED decides, 0 off, 1 on. */
  int32_t tiered;
  /* Optional: receives 0 when the routed schedule's kernel ran, 1 when the
   * LLVM tier's token kernel did (tiered, while the routed one compiles). */
  int32_t* ran_tier;
} kda_prefill_args;

/* The size of the first version of kda_prefill_args (through `family`). */
#define KDA_PREFILL_ARGS_MIN_SIZE (offsetof(kda_prefill_args, family) + sizeof(const char*))

typedef struct kda_buffer_s* kda_buffer;

/* Fills *args with empty tensors, scale 1/sqrt(128), lower_bound -5, no
 * checkpoints, and struct_size = sizeof(kda_prefill_args). */
KDA_API void kda_prefill_args_init(kda_prefill_args* args);

/* Runs the prefill (eagerly: refused while args->stream is being captured
 * into a CUDA graph; capture kda_plan_run instead). out_ptr / final_state_ptr
 * (may be NULL) receive the output
 * and final-state device pointers; out_buffer / final_state_buffer (may be
 * NULL only when the caller provides the corresponding tensor) receive handles
 * to memory kdajit allocated (NULL when nothing was allocated). */
KDA_API kda_status kda_recurrent_prefill(const kda_prefill_args* args, void** out_ptr, void** final_state_ptr,
                                 kda_buffer* out_buffer, kda_buffer* final_state_buffer);

/* A prefill planned once for a call signature and run many times, the path
 * for CUDA-graph capture (kda::PrefillPlan in kdajit/kda.hpp has the rules). */
typedef struct kda_plan_s* kda_plan;

/* Plans for calls shaped like *signature (a real call's arguments; nothing is
 * launched). *plan receives the handle (NULL on failure). */
KDA_API kda_status kda_plan_create(const kda_prefill_args* signature, kda_plan* plan);

/* Bytes of the caller-owned workspace kda_plan_run needs. */
KDA_API kda_status kda_plan_workspace_bytes(kda_plan plan, int64_t* bytes);

/* Runs a call of the plan's signature on args->stream: no allocation, no
 * synchronisation, no compile, so it can be captured into a CUDA graph.
 * args->out is required. */
KDA_API kda_status kda_plan_run(kda_plan plan, const kda_prefill_args* args, void* workspace, int64_t workspace_bytes);

/* What a plan runs: *schedule and *target (may be NULL) receive names, and
 * *prepare_overlapped whether its runs take the prepare kernel beside the
 * recurrence; the strings live as long as the plan. */
KDA_API kda_status kda_plan_describe(kda_plan plan, const char** schedule, const char** target,
                                     int32_t* prepare_overlapped);

/* Destroys a plan (NULL is ignored); its workspaces may then serve another. */
KDA_API void kda_plan_destroy(kda_plan plan);

/* Frees a buffer kdajit allocated (NULL is ignored). */
KDA_API void kda_buffer_release(kda_buffer buffer);

/* Device pointer of a buffer. */
KDA_API void* kda_buffer_data(kda_buffer buffer);

/* Why the router picks what it picks for a call shaped like *args, without
 * running it; *text is valid until the calling thread's next kdajit call. */
KDA_API kda_status kda_explain_route(const kda_prefill_args* args, const char** text);

/* Serves the kernels of a bundle (kdajit aot build) before the disk cache and
 * NVRTC; *entries (may be NULL) receives how many entries it registered. */
KDA_API kda_status kda_register_kernel_bundle(const char* path, size_t* entries);

/* The kernel cache directory in use ("" when the cache is memory-only);
 * *path is valid until the calling thread's next kdajit call. */
KDA_API kda_status kda_kernel_cache_directory(const char** path);

/* Adds an NVRTC library path (kda::add_nvrtc_library_candidate): *added
 * (may be NULL) receives 0 when NVRTC was already loaded. */
KDA_API kda_status kda_add_nvrtc_library_candidate(const char* path, int32_t* added);

/* kda::toolchain_summary(), valid until the calling thread's next kdajit call. */
KDA_API const char* kda_toolchain_summary(void);

/* The last error message of the calling thread ("" when none). */
KDA_API const char* kda_last_error(void);

/* The library's version, "major.minor.patch" (its SONAME carries the major). */
KDA_API const char* kda_version(void);

#ifdef __cplusplus
}
#endif

#endif /* KDAJIT_KDA_C_H */
