#include "runtime/check_args.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <span>

namespace kda {
namespace {

constexpr std::int64_t k_max_heads = 32767;
constexpr std::int64_t k_max_sequences = 2147483647;

constexpr std::int64_t k_head_dim = 128;

using Named = NamedTensor;

void require_dtype(const char* name, const TensorRef& t, std::initializer_list<ElementType> allowed) {
  for (ElementType e : allowed) {
    if (t.dtype == e) {
      return;
    }
  }
  std::string want;
  for (ElementType e : allowed) {
    want += want.empty() ? "" : " or ";
    want += to_string(e);
  }
  throw TensorError(name, fmt::format("expected dtype {}, got {}", want, to_string(t.dtype)));
}

void require_shape(const char* name, const TensorRef& t, std::span<const std::int64_t> shape) {
  if (!std::ranges::equal(t.shape, shape)) {
    throw TensorError(name, fmt::format("expected shape {}, got {}", shape_string({shape.begin(), shape.end()}),
                                        shape_string(t.shape)));
  }
}

void require_shape(const char* name, const TensorRef& t, std::initializer_list<std::int64_t> shape) {
  require_shape(name, t, std::span<const std::int64_t>(shape.begin(), shape.size()));
}

void require_strides_rank(const char* name, const TensorRef& t) {
  if (!t.strides.empty() && t.strides.size() != t.shape.size()) {
    throw TensorError(name, fmt::format("{} strides given for a rank-{} tensor", t.strides.size(), t.shape.size()));
  }
}

void require_contiguous(const char* name, const TensorRef& t) {
  require_strides_rank(name, t);
  if (!t.is_contiguous()) {
    throw TensorError(name, fmt::format("expected contiguous strides {}, got {}", shape_string(t.contiguous_strides()),
                                        shape_string(t.effective_strides())));
  }
}

void require_aligned(const char* name, const TensorRef& t) {
  if (t.begin_address() % 16 != 0) {
    throw TensorError(name, fmt::format("data pointer {:#x} is not 16-byte aligned", t.begin_address()));
  }
}

// Scalar loads need at least element alignment.
void require_element_aligned(const char* name, const TensorRef& t) {
  const std::int64_t size = element_size(t.dtype);
  if (t.begin_address() % static_cast<std::uintptr_t>(size) != 0) {
    throw TensorError(name, fmt::format("data pointer {:#x} is not aligned to its {}-byte elements", t.begin_address(),
                                        size));
  }
}

void require_device(const char* name, const TensorRef& t, int device, const PointerDevice& pointer_device) {
  const std::optional<int> d = pointer_device(t.data);
  if (!d) {
    throw TensorError(name, fmt::format("data pointer {:#x} is not device memory", t.begin_address()));
  }
  if (*d != device) {
    throw TensorError(name, fmt::format("expected memory on device {} (the current context), got device {}", device, *d));
  }
}

void require_no_overlap(const Named& output, std::span<const Named> others) {
  for (const Named& o : others) {
    if (o.tensor == output.tensor) {
      continue; // itself
    }
    if (o.tensor->defined() && output.tensor->begin_address() < o.tensor->end_address() &&
        o.tensor->begin_address() < output.tensor->end_address()) {
      throw TensorError(output.name, fmt::format("overlaps input '{}' (bytes {:#x}..{:#x} and {:#x}..{:#x})", o.name,
                                                 output.tensor->begin_address(), output.tensor->end_address(),
                                                 o.tensor->begin_address(), o.tensor->end_address()));
    }
  }
}

void check_qkvg(const PrefillArgs& a, ProblemShape& p) {
  if (!a.q.defined()) {
    throw TensorError("q", "is required");
  }
  require_dtype("q", a.q, {ElementType::bf16});
  if (a.q.shape.size() != 4 || a.q.shape[3] != k_head_dim) {
    throw TensorError("q", fmt::format("expected shape [B, T, H, 128], got {}", shape_string(a.q.shape)));
  }
  for (std::int64_t d : a.q.shape) {
    if (d <= 0) {
      throw TensorError("q", fmt::format("expected positive sizes, got {}", shape_string(a.q.shape)));
    }
  }
  // CUDA grids: the recurrence's y extent is heads x row blocks (up to 2),
  // at most 65,535; sequences are numbered in 32 bits.
  if (a.q.shape[2] > k_max_heads) {
    throw TensorError("q", fmt::format("{} heads: at most {} are supported", a.q.shape[2], k_max_heads));
  }
  if (a.q.shape[0] > k_max_sequences) {
    throw TensorError("q", fmt::format("B = {}: at most {} sequences are supported", a.q.shape[0], k_max_sequences));
  }
  p.batch = a.q.shape[0];
  p.seq_len = a.q.shape[1];
  p.heads = static_cast<int>(a.q.shape[2]);
  p.total_tokens = p.batch * p.seq_len;
  for (const Named& n : {Named{"q", &a.q}, Named{"k", &a.k}, Named{"v", &a.v}, Named{"g", &a.g}}) {
    if (!n.tensor->defined()) {
      throw TensorError(n.name, "is required");
    }
    require_dtype(n.name, *n.tensor, {ElementType::bf16});
    require_shape(n.name, *n.tensor, a.q.shape);
    require_contiguous(n.name, *n.tensor);
    require_aligned(n.name, *n.tensor);
  }
}

void check_beta_and_gate_params(const PrefillArgs& a, ProblemShape& p) {
  if (!a.beta.defined()) {
    throw TensorError("beta", "is required");
  }
  require_dtype("beta", a.beta, {ElementType::bf16});
  require_shape("beta", a.beta, {p.batch, p.seq_len, p.heads});
  require_strides_rank("beta", a.beta);
  const std::int64_t s[3] = {a.beta.stride(0), a.beta.stride(1), a.beta.stride(2)};
  if (s[2] != 1) {
    throw TensorError("beta", fmt::format("expected unit head stride, got stride {}", s[2]));
  }
  if (s[1] < p.heads && p.seq_len > 1) {
    throw TensorError("beta", fmt::format("token stride {} is smaller than the {} heads of a row", s[1], p.heads));
  }
  if (p.batch > 1 && s[0] != s[1] * p.seq_len) {
    throw TensorError("beta", fmt::format("batch stride {} must be T x token stride = {} (token rows evenly spaced)",
                                          s[0], s[1] * p.seq_len));
  }
  require_element_aligned("beta", a.beta);
  p.beta_token_stride = p.seq_len > 1 ? s[1] : p.heads;
  if (!std::isfinite(a.lower_bound) || !(a.lower_bound < 0.0)) {
    throw TensorError("lower_bound", fmt::format("must be finite and negative, got {}", a.lower_bound));
  }
  p.lower_bound = a.lower_bound;
  if (!a.a_log.defined()) {
    throw TensorError("A_log", "is required");
  }
  require_dtype("A_log", a.a_log, {ElementType::fp32});
  require_shape("A_log", a.a_log, {p.heads});
  require_contiguous("A_log", a.a_log);
  require_element_aligned("A_log", a.a_log);
  if (!a.dt_bias.defined()) {
    throw TensorError("dt_bias", "is required");
  }
  require_dtype("dt_bias", a.dt_bias, {ElementType::fp32});
  const std::int64_t per_head[2] = {p.heads, k_head_dim};
  const std::int64_t flat[1] = {p.heads * k_head_dim};
  if (!std::ranges::equal(a.dt_bias.shape, per_head) && !std::ranges::equal(a.dt_bias.shape, flat)) {
    throw TensorError("dt_bias", fmt::format("expected shape [{0}, 128] or [{1}], got {2}", p.heads,
                                             p.heads * k_head_dim, shape_string(a.dt_bias.shape)));
  }
  require_contiguous("dt_bias", a.dt_bias);
  require_element_aligned("dt_bias", a.dt_bias);
  if (!std::isfinite(a.scale)) {
    throw TensorError("scale", fmt::format("must be finite, got {}", a.scale));
  }
}

void check_layout(const PrefillArgs& a, ProblemShape& p) {
  if (!a.cu_seqlens.defined()) {
    p.layout = LayoutKind::fixed;
    p.num_seqs = static_cast<int>(p.batch);
    if (p.seq_len == 1) {
      throw TensorError("q", "T = 1 is decode, not prefill: recurrent_kda_prefill needs T > 1 (or packed input with more "
                             "tokens than sequences)");
    }
    return;
  }
  p.layout = LayoutKind::packed;
  require_dtype("cu_seqlens", a.cu_seqlens, {ElementType::i32, ElementType::i64});
  if (a.cu_seqlens.shape.size() != 1 || a.cu_seqlens.shape[0] < 2) {
    throw TensorError("cu_seqlens", fmt::format("expected shape [N + 1] with N >= 1, got {}",
                                                shape_string(a.cu_seqlens.shape)));
  }
  require_contiguous("cu_seqlens", a.cu_seqlens);
  require_element_aligned("cu_seqlens", a.cu_seqlens);
  if (p.batch != 1) {
    throw TensorError("q", fmt::format("packed input (cu_seqlens given) needs B = 1, got B = {}", p.batch));
  }
  if (a.cu_seqlens.shape[0] - 1 > k_max_sequences) {
    throw TensorError("cu_seqlens", fmt::format("{} sequences: at most {} are supported", a.cu_seqlens.shape[0] - 1,
                                                k_max_sequences));
  }
  p.num_seqs = static_cast<int>(a.cu_seqlens.shape[0] - 1);
  p.offsets_i64 = a.cu_seqlens.dtype == ElementType::i64;
  if (p.total_tokens <= p.num_seqs) {
    throw TensorError("q", fmt::format("{} tokens for {} sequences is decode, not prefill: packed prefill needs more "
                                       "tokens than sequences",
                                       p.total_tokens, p.num_seqs));
  }
}

void require_int32_per_sequence(const char* name, const TensorRef& t, const ProblemShape& p) {
  require_dtype(name, t, {ElementType::i32});
  require_shape(name, t, {p.num_seqs});
  require_contiguous(name, t);
  require_element_aligned(name, t);
}

// A pool [N_pool, H, 128, 128]: each slot contiguous, slots at least one
// slot's elements apart, base and pitch 16-byte aligned.
void check_state_pool(const PrefillArgs& a, ProblemShape& p) {
  const TensorRef& s = a.initial_state;
  require_strides_rank("initial_state", s);
  if (s.shape.size() != 4 || s.shape[0] < 1 || s.shape[1] != p.heads || s.shape[2] != k_head_dim ||
      s.shape[3] != k_head_dim) {
    throw TensorError("initial_state", fmt::format("expected a state pool [N_pool >= 1, {}, 128, 128] (with "
                                                   "ssm_state_indices), got {}",
                                                   p.heads, shape_string(s.shape)));
  }
  const std::int64_t slot = p.heads * k_head_dim * k_head_dim;
  const std::int64_t inner[3] = {k_head_dim * k_head_dim, k_head_dim, 1};
  const std::int64_t strides[3] = {s.stride(1), s.stride(2), s.stride(3)};
  if (!std::ranges::equal(strides, inner)) {
    throw TensorError("initial_state", fmt::format("each pool slot [H, 128, 128] must be contiguous: expected strides "
                                                   "[*, {}, {}, {}], got {}",
                                                   inner[0], inner[1], inner[2], shape_string(s.effective_strides())));
  }
  const std::int64_t pitch = s.stride(0);
  if (s.shape[0] > 1 && pitch < slot) {
    throw TensorError("initial_state", fmt::format("slot pitch {} elements is below one slot's {} (H x 128 x 128): "
                                                   "slots would overlap",
                                                   pitch, slot));
  }
  const std::int64_t pitch_bytes = pitch * element_size(s.dtype);
  if (s.shape[0] > 1 && pitch_bytes % 16 != 0) { // one slot: no pitch
    throw TensorError("initial_state", fmt::format("slot pitch {} elements ({} bytes) is not a multiple of 16 bytes",
                                                   pitch, pitch_bytes));
  }
  require_aligned("initial_state", s);
  require_int32_per_sequence("ssm_state_indices", a.ssm_state_indices, p);
  p.state_pool = true;
  p.state_slot_stride = s.shape[0] > 1 ? pitch : slot;
}

void check_state(const PrefillArgs& a, ProblemShape& p) {
  const std::int64_t state_shape[4] = {p.num_seqs, p.heads, k_head_dim, k_head_dim};
  p.state_slot_stride = p.heads * k_head_dim * k_head_dim;
  if (a.ssm_state_indices.defined() && !a.initial_state.defined()) {
    throw TensorError("ssm_state_indices", "given without initial_state: the indices name slots of the initial_state "
                                           "pool");
  }
  if (a.initial_state.defined()) {
    require_dtype("initial_state", a.initial_state, {ElementType::bf16, ElementType::fp32});
    if (a.ssm_state_indices.defined()) {
      check_state_pool(a, p);
    } else {
      require_shape("initial_state", a.initial_state, state_shape);
      require_contiguous("initial_state", a.initial_state);
      require_aligned("initial_state", a.initial_state);
    }
    if (a.final_state.defined()) {
      throw TensorError("final_state", "must not be given with initial_state: the initial state is updated in place");
    }
    p.state_in = true;
    p.state_out = true;
    p.state_dtype = a.initial_state.dtype == ElementType::fp32 ? StatePrecision::fp32 : StatePrecision::bf16;
    return;
  }
  if (a.final_state.defined()) {
    if (!a.output_final_state) {
      throw TensorError("final_state", "given but output_final_state is false");
    }
    require_dtype("final_state", a.final_state, {ElementType::bf16, ElementType::fp32});
    require_shape("final_state", a.final_state, state_shape);
    require_contiguous("final_state", a.final_state);
    require_aligned("final_state", a.final_state);
    p.state_dtype = a.final_state.dtype == ElementType::fp32 ? StatePrecision::fp32 : StatePrecision::bf16;
  }
  p.state_out = a.output_final_state;
}

void check_seq_order(const PrefillArgs& a, ProblemShape& p) {
  if (!a.seq_order.defined()) {
    return;
  }
  if (p.layout != LayoutKind::packed) {
    throw TensorError("seq_order", "is for packed input (cu_seqlens): a fixed-layout call takes its sequences in order");
  }
  require_int32_per_sequence("seq_order", a.seq_order, p);
  p.seq_order = true;
}

// Rows a fixed-layout call writes: B x ceil(T / P) (packed: a caller contract).
void check_checkpoints(const PrefillArgs& a, ProblemShape& p) {
  const std::int64_t every = a.checkpoint_every_n_tokens;
  if (every == 0) {
    if (a.state_checkpoints.defined() || a.checkpoint_cu_starts.defined()) {
      throw TensorError("checkpoint_every_n_tokens", fmt::format("is 0 but {} given: set the interval (a positive "
                                                                 "multiple of 16) or pass neither",
                                                                 a.state_checkpoints.defined() ? "state_checkpoints is"
                                                                                               : "checkpoint_cu_starts is"));
    }
    return;
  }
  if (every < 0 || every % 16 != 0) {
    throw TensorError("checkpoint_every_n_tokens", fmt::format("must be a positive multiple of 16, got {}", every));
  }
  if (!a.state_checkpoints.defined()) {
    throw TensorError("state_checkpoints", "is required with checkpoint_every_n_tokens (caller-preallocated bf16 "
                                           "[C, H, 128, 128])");
  }
  if (!a.checkpoint_cu_starts.defined()) {
    throw TensorError("checkpoint_cu_starts", "is required with checkpoint_every_n_tokens (int64 [N + 1])");
  }
  const TensorRef& c = a.state_checkpoints;
  require_dtype("state_checkpoints", c, {ElementType::bf16});
  if (c.shape.size() != 4 || c.shape[0] < 0 || c.shape[1] != p.heads || c.shape[2] != k_head_dim ||
      c.shape[3] != k_head_dim) {
    throw TensorError("state_checkpoints", fmt::format("expected shape [C, {}, 128, 128], got {}", p.heads,
                                                       shape_string(c.shape)));
  }
  require_contiguous("state_checkpoints", c);
  require_aligned("state_checkpoints", c);
  if (p.layout == LayoutKind::fixed) {
    const std::int64_t rows = p.num_seqs * ((p.seq_len + every - 1) / every);
    if (c.shape[0] < rows) {
      throw TensorError("state_checkpoints", fmt::format("{} rows for {} sequences of {} tokens every {}: at least {} "
                                                         "are written",
                                                         c.shape[0], p.num_seqs, p.seq_len, every, rows));
    }
  }
  const TensorRef& starts = a.checkpoint_cu_starts;
  require_dtype("checkpoint_cu_starts", starts, {ElementType::i64});
  require_shape("checkpoint_cu_starts", starts, {static_cast<std::int64_t>(p.num_seqs) + 1});
  require_contiguous("checkpoint_cu_starts", starts);
  require_element_aligned("checkpoint_cu_starts", starts);
  p.checkpoint_interval = every;
}

constexpr std::size_t k_inputs = k_call_inputs;

void check_outputs(const PrefillArgs& a) {
  const std::array<Named, k_call_tensors> tensors = call_tensors(a);
  const std::span<const Named> inputs(tensors.data(), k_inputs);
  if (a.initial_state.defined()) {
    // Updated in place: an output that must not share bytes with any input.
    require_no_overlap({"initial_state", &a.initial_state}, inputs);
  }
  if (a.out.defined()) {
    require_dtype("out", a.out, {ElementType::bf16});
    require_shape("out", a.out, a.v.shape);
    require_contiguous("out", a.out);
    require_aligned("out", a.out);
    require_no_overlap({"out", &a.out}, inputs);
  }
  if (a.final_state.defined()) {
    require_no_overlap({"final_state", &a.final_state}, std::span<const Named>(tensors.data(), k_inputs + 1));
  }
  if (a.state_checkpoints.defined()) {
    require_no_overlap({"state_checkpoints", &a.state_checkpoints},
                       std::span<const Named>(tensors.data(), k_inputs + 2));
  }
}

} // namespace

std::array<NamedTensor, k_call_tensors> call_tensors(const PrefillArgs& a) {
  return {{{"q", &a.q},
           {"k", &a.k},
           {"v", &a.v},
           {"g", &a.g},
           {"beta", &a.beta},
           {"A_log", &a.a_log},
           {"dt_bias", &a.dt_bias},
           {"initial_state", &a.initial_state},
           {"cu_seqlens", &a.cu_seqlens},
           {"ssm_state_indices", &a.ssm_state_indices},
           {"seq_order", &a.seq_order},
           {"checkpoint_cu_starts", &a.checkpoint_cu_starts},
           {"out", &a.out},
           {"final_state", &a.final_state},
           {"state_checkpoints", &a.state_checkpoints}}};
}

ProblemShape check_prefill_args(const PrefillArgs& args, int device, const PointerDevice& pointer_device) {
  ProblemShape p;
  check_qkvg(args, p);
  check_beta_and_gate_params(args, p);
  check_layout(args, p);
  check_state(args, p);
  check_seq_order(args, p);
  check_checkpoints(args, p);
  check_outputs(args);
  const std::array<Named, k_call_tensors> all = call_tensors(args);
  for (const Named& n : all) {
    if (n.tensor->defined()) {
      require_device(n.name, *n.tensor, device, pointer_device);
    }
  }
  return p;
}

void check_lower_bound(double lower_bound, double range_min, double range_max, double safe_magnitude,
                       const std::string& schedule) {
  if (!std::isfinite(lower_bound) || !(lower_bound < 0.0)) {
    throw TensorError("lower_bound", fmt::format("must be finite and negative, got {}", lower_bound));
  }
  if (lower_bound < range_min || lower_bound >= range_max || std::fabs(lower_bound) >= safe_magnitude) {
    throw TensorError("lower_bound",
                      fmt::format("{} is outside the range schedule {} makes safe in BF16: [{}, {}) with "
                                  "|lower_bound| < {:.4f}",
                                  lower_bound, schedule, range_min, range_max, safe_magnitude));
  }
}

} // namespace kda
