#include "device_problem.hpp"

#include "compiler/bf16.hpp"

#include <random>

namespace kda::test {

DeviceProblem::DeviceProblem(std::int64_t batch, std::int64_t tokens, std::int64_t heads, std::uint64_t seed)
    : spec{batch, tokens, heads, {}, reference::testing::GateDistribution::standard, 0}, problem(spec, seed),
      q(DeviceArray::from(problem.q)), k(DeviceArray::from(problem.k)), v(DeviceArray::from(problem.v)),
      g(DeviceArray::from(problem.g)), beta(DeviceArray::from(problem.beta)), a_log(DeviceArray::from(problem.a_log)),
      dt_bias(DeviceArray::from(problem.dt_bias)), state(static_cast<std::size_t>(batch * heads * 128 * 128 * 2)),
      out(static_cast<std::size_t>(batch * tokens * heads * 128 * 2)) {
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<float> normal(0.0f, 0.25f);
  initial_state.resize(state.bytes() / 2);
  for (std::uint16_t& x : initial_state) {
    x = float_to_bf16(normal(rng)).bits;
  }
}

void DeviceProblem::reset() {
  out.poison();
  state.upload(initial_state.data(), state.bytes());
}

PrefillArgs DeviceProblem::args(CUstream stream) const {
  PrefillArgs a;
  const std::vector<std::int64_t> shape{spec.batch, spec.tokens, spec.heads, 128};
  a.q = TensorRef::contiguous(q.data(), ElementType::bf16, shape);
  a.k = TensorRef::contiguous(k.data(), ElementType::bf16, shape);
  a.v = TensorRef::contiguous(v.data(), ElementType::bf16, shape);
  a.g = TensorRef::contiguous(g.data(), ElementType::bf16, shape);
  a.beta = TensorRef::contiguous(beta.data(), ElementType::bf16, {spec.batch, spec.tokens, spec.heads});
  a.a_log = TensorRef::contiguous(a_log.data(), ElementType::fp32, {spec.heads});
  a.dt_bias = TensorRef::contiguous(dt_bias.data(), ElementType::fp32, {spec.heads, 128});
  a.initial_state = TensorRef::contiguous(state.data(), ElementType::bf16, {spec.batch, spec.heads, 128, 128});
  a.out = TensorRef::contiguous(out.data(), ElementType::bf16, shape);
  a.stream = stream;
  return a;
}

std::vector<std::uint8_t> DeviceProblem::result() const {
  std::vector<std::uint8_t> bytes(out.bytes() + state.bytes());
  out.download(bytes.data(), out.bytes());
  state.download(bytes.data() + out.bytes(), state.bytes());
  return bytes;
}

Stream::Stream() {
  KDA_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
}

Stream::~Stream() {
  runtime::driver_api().cuStreamDestroy(s);
}

} // namespace kda::test
