#include "device_inputs.hpp"

namespace kda::test {

DeviceInputs::DeviceInputs(const reference::testing::RandomProblem& problem)
    : spec(problem.spec), sequences(problem.sequences()), q(DeviceArray::from(problem.q)),
      k(DeviceArray::from(problem.k)), v(DeviceArray::from(problem.v)), g(DeviceArray::from(problem.g)),
      beta(DeviceArray::from(problem.beta)), a_log(DeviceArray::from(problem.a_log)),
      dt_bias(DeviceArray::from(problem.dt_bias)), cu32(DeviceArray::from(problem.cu32)),
      cu64(DeviceArray::from(problem.cu64)) {}

PrefillArgs DeviceInputs::args(bool int32_offsets) const {
  const std::int64_t batch = spec.batch;
  const std::int64_t tokens = spec.tokens;
  const std::int64_t heads = spec.heads;
  PrefillArgs a;
  const std::vector<std::int64_t> shape{batch, tokens, heads, 128};
  a.q = TensorRef::contiguous(q.data(), ElementType::bf16, shape);
  a.k = TensorRef::contiguous(k.data(), ElementType::bf16, shape);
  a.v = TensorRef::contiguous(v.data(), ElementType::bf16, shape);
  a.g = TensorRef::contiguous(g.data(), ElementType::bf16, shape);
  a.beta = TensorRef::contiguous(beta.data(), ElementType::bf16, {batch, tokens, heads});
  if (spec.beta_row_stride > 0) {
    a.beta.strides = {tokens * spec.beta_row_stride, spec.beta_row_stride, 1};
  }
  a.a_log = TensorRef::contiguous(a_log.data(), ElementType::fp32, {heads});
  a.dt_bias = TensorRef::contiguous(dt_bias.data(), ElementType::fp32, {heads, 128});
  a.lower_bound = -5.0;
  if (!spec.seqlens.empty()) {
    a.cu_seqlens = int32_offsets ? TensorRef::contiguous(cu32.data(), ElementType::i32, {sequences + 1})
                                 : TensorRef::contiguous(cu64.data(), ElementType::i64, {sequences + 1});
  }
  return a;
}

} // namespace kda::test
