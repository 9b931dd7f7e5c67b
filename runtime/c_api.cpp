// The C API (kdajit/kda_c.h): maps the C structs onto the C++ API and every
// exception onto a kda_status with a thread-local message.
#include "kdajit/kda_c.h"

#include "compiler/errors.hpp"
#include "compiler/schedule_enums.hpp"
#include "kdajit/kda.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <string>

struct kda_buffer_s {
  kda::DeviceBuffer buffer;
};

struct kda_plan_s {
  explicit kda_plan_s(kda::PrefillPlan made) : plan(std::move(made)) {}
  kda::PrefillPlan plan;
  // The last run's arguments: the caller's struct with its pointers masked
  // (mask_pointers) and its conversion. A run that differs from it only in
  // pointers (every run of the plan's signature) updates the converted
  // pointers instead of converting again. One thread at a time uses it;
  // others convert in full.
  std::mutex last_mutex;
  bool has_last = false;
  kda_prefill_args last_masked{};
  kda::PrefillArgs last_args;
};

namespace {

thread_local std::string t_last_error;
thread_local std::string t_text; // strings handed back by kda_explain_route etc.

kda::TensorRef to_tensor(const char* name, const kda_tensor& t) {
  kda::TensorRef r;
  r.data = t.data;
  if (t.data == nullptr) {
    return r;
  }
  if (t.dtype < KDA_BF16 || t.dtype > KDA_INT64) {
    throw kda::TensorError(name, "unknown dtype " + std::to_string(static_cast<int>(t.dtype)));
  }
  if (t.rank < 0 || t.rank > 4) {
    throw kda::TensorError(name, "rank " + std::to_string(t.rank) + " is outside 0..4");
  }
  r.dtype = static_cast<kda::ElementType>(t.dtype);
  const int rank = t.rank;
  bool strided = false;
  for (int i = 0; i < rank; ++i) {
    r.shape.push_back(t.shape[i]);
    strided = strided || t.strides[i] != 0;
  }
  if (strided) {
    r.strides.assign(t.strides, t.strides + rank);
  }
  return r;
}

// struct_size: at least the first version's fields, at most this library's.
void check_struct_size(std::size_t size) {
  if (size == 0) {
    throw kda::TensorError("struct_size", "is 0: initialise the arguments with kda_prefill_args_init");
  }
  if (size < KDA_PREFILL_ARGS_MIN_SIZE) {
    throw kda::TensorError("struct_size", fmt::format("{} bytes is smaller than the first version of "
                                                      "kda_prefill_args ({} bytes)",
                                                      size, KDA_PREFILL_ARGS_MIN_SIZE));
  }
  if (size > sizeof(kda_prefill_args)) {
    throw kda::TensorError("struct_size", fmt::format("{} bytes is larger than this library's kda_prefill_args ({} "
                                                      "bytes): the caller was built against a newer kdajit",
                                                      size, sizeof(kda_prefill_args)));
  }
}

// Whether the caller's struct (struct_size bytes) holds the field at `offset`.
bool has_field(const kda_prefill_args& args, std::size_t offset, std::size_t size) {
  return offset + size <= args.struct_size;
}

kda_tensor empty_tensor() {
  kda_tensor t{};
  return t;
}

template <typename Fn>
kda_status guarded(Fn&& fn) {
  t_last_error.clear();
  try {
    fn();
    return KDA_OK;
  } catch (const kda::TensorError& e) {
    t_last_error = e.what();
    return KDA_ERROR_TENSOR;
  } catch (const kda::ScheduleError& e) {
    t_last_error = e.what();
    return KDA_ERROR_SCHEDULE;
  } catch (const kda::ToolchainError& e) {
    t_last_error = e.what();
    return KDA_ERROR_TOOLCHAIN;
  } catch (const kda::CacheError& e) {
    t_last_error = e.what();
    return KDA_ERROR_CACHE;
  } catch (const std::exception& e) {
    t_last_error = std::string("internal error: ") + e.what();
    return KDA_ERROR_INTERNAL;
  } catch (...) {
    t_last_error = "internal error: unknown exception";
    return KDA_ERROR_INTERNAL;
  }
}

// The C++ arguments and options of a C call (struct_size checked).
kda::PrefillArgs to_prefill_args(const kda_prefill_args& c, kda::PrefillOptions& options) {
  const kda_prefill_args* args = &c;
  check_struct_size(args->struct_size);
  kda::PrefillArgs a;
  a.q = to_tensor("q", args->q);
  a.k = to_tensor("k", args->k);
  a.v = to_tensor("v", args->v);
  a.g = to_tensor("g", args->g);
  a.beta = to_tensor("beta", args->beta);
  a.a_log = to_tensor("A_log", args->a_log);
  a.dt_bias = to_tensor("dt_bias", args->dt_bias);
  a.scale = args->scale;
  a.lower_bound = args->lower_bound;
  a.initial_state = to_tensor("initial_state", args->initial_state);
  a.output_final_state = args->output_final_state != 0;
  a.cu_seqlens = to_tensor("cu_seqlens", args->cu_seqlens);
  a.out = to_tensor("out", args->out);
  a.final_state = to_tensor("final_state", args->final_state);
  a.stream = args->stream;
  // fields past the caller's struct_size read as absent
  if (has_field(*args, offsetof(kda_prefill_args, checkpoint_every_n_tokens), sizeof(std::int64_t))) {
    a.ssm_state_indices = to_tensor("ssm_state_indices", args->ssm_state_indices);
    a.seq_order = to_tensor("seq_order", args->seq_order);
    a.state_checkpoints = to_tensor("state_checkpoints", args->state_checkpoints);
    a.checkpoint_cu_starts = to_tensor("checkpoint_cu_starts", args->checkpoint_cu_starts);
    a.checkpoint_every_n_tokens = args->checkpoint_every_n_tokens;
  }
  if (has_field(*args, offsetof(kda_prefill_args, tiered), sizeof(std::int32_t)) && args->tiered >= 0) {
    options.tiered = args->tiered != 0;
  }
  if (has_field(*args, offsetof(kda_prefill_args, prepare_overlap), sizeof(std::int32_t))) {
    options.prepare_overlap = args->prepare_overlap != 0;
  }
  if (args->schedule != nullptr) {
    options.schedule = std::string(args->schedule);
  }
  if (args->family != nullptr) {
    options.family = kda::parse_family(args->family);
    if (!options.family) {
      throw kda::TensorError("family", fmt::format("unknown family '{}' (known: {})", args->family,
                                                   kda::family_words()));
    }
  }
  return a;
}

// The tensors of kda_prefill_args and where their conversions live.
struct TensorField {
  std::size_t offset;
  kda::TensorRef kda::PrefillArgs::*member;
};

constexpr TensorField k_tensor_fields[] = {
    {offsetof(kda_prefill_args, q), &kda::PrefillArgs::q},
    {offsetof(kda_prefill_args, k), &kda::PrefillArgs::k},
    {offsetof(kda_prefill_args, v), &kda::PrefillArgs::v},
    {offsetof(kda_prefill_args, g), &kda::PrefillArgs::g},
    {offsetof(kda_prefill_args, beta), &kda::PrefillArgs::beta},
    {offsetof(kda_prefill_args, a_log), &kda::PrefillArgs::a_log},
    {offsetof(kda_prefill_args, dt_bias), &kda::PrefillArgs::dt_bias},
    {offsetof(kda_prefill_args, initial_state), &kda::PrefillArgs::initial_state},
    {offsetof(kda_prefill_args, cu_seqlens), &kda::PrefillArgs::cu_seqlens},
    {offsetof(kda_prefill_args, out), &kda::PrefillArgs::out},
    {offsetof(kda_prefill_args, final_state), &kda::PrefillArgs::final_state},
    {offsetof(kda_prefill_args, ssm_state_indices), &kda::PrefillArgs::ssm_state_indices},
    {offsetof(kda_prefill_args, seq_order), &kda::PrefillArgs::seq_order},
    {offsetof(kda_prefill_args, state_checkpoints), &kda::PrefillArgs::state_checkpoints},
    {offsetof(kda_prefill_args, checkpoint_cu_starts), &kda::PrefillArgs::checkpoint_cu_starts},
};

const kda_tensor& tensor_at(const kda_prefill_args& args, const TensorField& f) {
  return *reinterpret_cast<const kda_tensor*>(reinterpret_cast<const char*>(&args) + f.offset);
}

// The caller's struct_size bytes (the rest zero) with every tensor pointer
// reduced to given / not given and the stream cleared: equal masks mean equal
// arguments but for their pointers.
kda_prefill_args mask_pointers(const kda_prefill_args& args) {
  kda_prefill_args m;
  std::memset(&m, 0, sizeof(m));
  std::memcpy(&m, &args, args.struct_size);
  for (const TensorField& f : k_tensor_fields) {
    if (f.offset + sizeof(kda_tensor) <= args.struct_size) {
      auto* t = reinterpret_cast<kda_tensor*>(reinterpret_cast<char*>(&m) + f.offset);
      t->data = t->data != nullptr ? reinterpret_cast<const void*>(1) : nullptr;
    }
  }
  m.stream = nullptr;
  return m;
}

void run_plan(kda_plan_s& p, const kda_prefill_args& args, void* workspace, std::int64_t workspace_bytes) {
  check_struct_size(args.struct_size);
  std::unique_lock lock(p.last_mutex, std::try_to_lock);
  const kda_prefill_args masked = mask_pointers(args);
  if (lock.owns_lock() && p.has_last && std::memcmp(&masked, &p.last_masked, sizeof(masked)) == 0) {
    for (const TensorField& f : k_tensor_fields) {
      if (f.offset + sizeof(kda_tensor) <= args.struct_size) {
        (p.last_args.*f.member).data = tensor_at(args, f).data;
      }
    }
    p.last_args.stream = args.stream;
    p.plan.run(p.last_args, workspace, workspace_bytes);
    return;
  }
  kda::PrefillOptions options; // a plan's options are its own: run takes none
  kda::PrefillArgs a = to_prefill_args(args, options);
  p.plan.run(a, workspace, workspace_bytes);
  if (lock.owns_lock()) {
    p.last_masked = masked;
    p.last_args = std::move(a);
    p.has_last = true;
  }
}

} // namespace

extern "C" {

void kda_prefill_args_init(kda_prefill_args* args) {
  if (args == nullptr) {
    return;
  }
  *args = kda_prefill_args{};
  args->struct_size = sizeof(kda_prefill_args);
  args->q = args->k = args->v = args->g = args->beta = args->a_log = args->dt_bias = empty_tensor();
  args->initial_state = args->cu_seqlens = args->out = args->final_state = empty_tensor();
  args->ssm_state_indices = args->seq_order = args->state_checkpoints = args->checkpoint_cu_starts = empty_tensor();
  args->checkpoint_every_n_tokens = 0;
  args->prepare_overlap = 1;
  args->tiered = -1;
  args->ran_tier = nullptr;
  args->scale = 1.0 / std::sqrt(128.0);
  args->lower_bound = -5.0;
}

kda_status kda_recurrent_prefill(const kda_prefill_args* args, void** out_ptr, void** final_state_ptr,
                                 kda_buffer* out_buffer, kda_buffer* final_state_buffer) {
  return guarded([&] {
    if (args == nullptr) {
      throw kda::TensorError("args", "is NULL");
    }
    check_struct_size(args->struct_size);
    if (args->out.data == nullptr && out_buffer == nullptr) {
      throw kda::TensorError("out_buffer", "is NULL but no 'out' tensor is given: kdajit allocates the output and "
                                           "needs a handle to return it");
    }
    if (args->initial_state.data == nullptr && args->output_final_state && args->final_state.data == nullptr &&
        final_state_buffer == nullptr) {
      throw kda::TensorError("final_state_buffer", "is NULL but kdajit must allocate the final state");
    }
    kda::PrefillOptions options;
    const kda::PrefillArgs a = to_prefill_args(*args, options);
    kda::PrefillResult r = kda::recurrent_kda_prefill(a, options);
    if (has_field(*args, offsetof(kda_prefill_args, ran_tier), sizeof(std::int32_t*)) && args->ran_tier != nullptr) {
      *args->ran_tier = r.tier == kda::KernelTier::tier0 ? 1 : 0;
    }
    if (out_ptr != nullptr) {
      *out_ptr = r.out;
    }
    if (final_state_ptr != nullptr) {
      *final_state_ptr = r.final_state;
    }
    if (out_buffer != nullptr) {
      *out_buffer = r.owned_out ? new kda_buffer_s{std::move(r.owned_out)} : nullptr;
    }
    if (final_state_buffer != nullptr) {
      *final_state_buffer = r.owned_final_state ? new kda_buffer_s{std::move(r.owned_final_state)} : nullptr;
    }
  });
}

kda_status kda_plan_create(const kda_prefill_args* signature, kda_plan* plan) {
  if (plan != nullptr) {
    *plan = nullptr;
  }
  return guarded([&] {
    if (signature == nullptr || plan == nullptr) {
      throw kda::TensorError(signature == nullptr ? "signature" : "plan", "is NULL");
    }
    kda::PrefillOptions options;
    const kda::PrefillArgs a = to_prefill_args(*signature, options);
    *plan = new kda_plan_s(kda::PrefillPlan(a, options));
  });
}

kda_status kda_plan_workspace_bytes(kda_plan plan, int64_t* bytes) {
  return guarded([&] {
    if (plan == nullptr || bytes == nullptr) {
      throw kda::TensorError(plan == nullptr ? "plan" : "bytes", "is NULL");
    }
    *bytes = plan->plan.workspace_bytes();
  });
}

kda_status kda_plan_run(kda_plan plan, const kda_prefill_args* args, void* workspace, int64_t workspace_bytes) {
  return guarded([&] {
    if (plan == nullptr || args == nullptr) {
      throw kda::TensorError(plan == nullptr ? "plan" : "args", "is NULL");
    }
    run_plan(*plan, *args, workspace, workspace_bytes);
  });
}

kda_status kda_plan_describe(kda_plan plan, const char** schedule, const char** target,
                             int32_t* prepare_overlapped) {
  return guarded([&] {
    if (plan == nullptr) {
      throw kda::TensorError("plan", "is NULL");
    }
    if (schedule != nullptr) {
      *schedule = plan->plan.schedule().c_str();
    }
    if (target != nullptr) {
      *target = plan->plan.target().c_str();
    }
    if (prepare_overlapped != nullptr) {
      *prepare_overlapped = plan->plan.prepare_overlapped() ? 1 : 0;
    }
  });
}

void kda_plan_destroy(kda_plan plan) {
  delete plan;
}

void kda_buffer_release(kda_buffer buffer) {
  delete buffer;
}

void* kda_buffer_data(kda_buffer buffer) {
  return buffer == nullptr ? nullptr : buffer->buffer.data();
}

kda_status kda_explain_route(const kda_prefill_args* args, const char** text) {
  return guarded([&] {
    if (args == nullptr || text == nullptr) {
      throw kda::TensorError(args == nullptr ? "args" : "text", "is NULL");
    }
    kda::PrefillOptions options;
    const kda::PrefillArgs a = to_prefill_args(*args, options);
    t_text = kda::explain_prefill_route(a, options);
    *text = t_text.c_str();
  });
}

kda_status kda_register_kernel_bundle(const char* path, size_t* entries) {
  return guarded([&] {
    if (path == nullptr) {
      throw kda::TensorError("path", "is NULL");
    }
    const std::size_t n = kda::register_kernel_bundle(path);
    if (entries != nullptr) {
      *entries = n;
    }
  });
}

kda_status kda_kernel_cache_directory(const char** path) {
  return guarded([&] {
    if (path == nullptr) {
      throw kda::TensorError("path", "is NULL");
    }
    t_text = kda::kernel_cache_directory();
    *path = t_text.c_str();
  });
}

kda_status kda_add_nvrtc_library_candidate(const char* path, int32_t* added) {
  return guarded([&] {
    if (path == nullptr || *path == '\0') {
      throw kda::TensorError("path", "is NULL or empty");
    }
    const bool ok = kda::add_nvrtc_library_candidate(path);
    if (added != nullptr) {
      *added = ok ? 1 : 0;
    }
  });
}

const char* kda_toolchain_summary(void) {
  t_text = kda::toolchain_summary();
  return t_text.c_str();
}

const char* kda_last_error(void) {
  return t_last_error.c_str();
}

const char* kda_version(void) {
  return KDAJIT_VERSION;
}

} // extern "C"
