#include "c_args.hpp"

#include <algorithm>

namespace kda::test {

kda_tensor c_tensor(const TensorRef& t) {
  kda_tensor x{};
  x.data = t.data;
  x.dtype = static_cast<kda_dtype>(t.dtype); // ElementType and kda_dtype share their values
  x.rank = static_cast<std::int32_t>(t.shape.size());
  std::copy(t.shape.begin(), t.shape.end(), x.shape);
  std::copy(t.strides.begin(), t.strides.end(), x.strides);
  return x;
}

kda_prefill_args c_args(const PrefillArgs& a) {
  kda_prefill_args c;
  kda_prefill_args_init(&c);
  c.q = c_tensor(a.q);
  c.k = c_tensor(a.k);
  c.v = c_tensor(a.v);
  c.g = c_tensor(a.g);
  c.beta = c_tensor(a.beta);
  c.a_log = c_tensor(a.a_log);
  c.dt_bias = c_tensor(a.dt_bias);
  c.scale = a.scale;
  c.lower_bound = a.lower_bound;
  c.initial_state = c_tensor(a.initial_state);
  c.output_final_state = a.output_final_state ? 1 : 0;
  c.cu_seqlens = c_tensor(a.cu_seqlens);
  c.out = c_tensor(a.out);
  c.final_state = c_tensor(a.final_state);
  c.stream = a.stream;
  c.ssm_state_indices = c_tensor(a.ssm_state_indices);
  c.seq_order = c_tensor(a.seq_order);
  c.state_checkpoints = c_tensor(a.state_checkpoints);
  c.checkpoint_cu_starts = c_tensor(a.checkpoint_cu_starts);
  c.checkpoint_every_n_tokens = a.checkpoint_every_n_tokens;
  return c;
}

} // namespace kda::test
