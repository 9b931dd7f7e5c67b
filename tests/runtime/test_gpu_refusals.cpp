// On the GPU: calls the API must refuse are refused before any launch, with a
// TensorError naming the argument, and the caller's output and state stay
// bit-identical (poisoned output stays poisoned).
#include "device_array.hpp"
#include "runtime/kda.hpp"

#include "compiler/errors.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace kda;
using kda::test::DeviceArray;

namespace {

struct Call {
  DeviceArray q, k, v, g, beta, a_log, dt_bias, state, out;
  std::int64_t tokens;
  int heads;
  explicit Call(std::int64_t t, int h)
      : q(t * h * 128 * 2), k(t * h * 128 * 2), v(t * h * 128 * 2), g(t * h * 128 * 2), beta(t * h * 2), a_log(h * 4),
        dt_bias(h * 128 * 4), state(h * 128 * 128 * 2), out(t * h * 128 * 2), tokens(t), heads(h) {
    for (DeviceArray* a : {&q, &k, &v, &g, &beta, &a_log, &dt_bias, &state}) {
      a->poison(0x3c); // finite values (bf16 0x3c3c, fp32 0x3c3c3c3c)
    }
    out.poison(0xff);
  }
  PrefillArgs args() const {
    PrefillArgs a;
    const std::vector<std::int64_t> shape{1, tokens, heads, 128};
    a.q = TensorRef::contiguous(q.data(), ElementType::bf16, shape);
    a.k = TensorRef::contiguous(k.data(), ElementType::bf16, shape);
    a.v = TensorRef::contiguous(v.data(), ElementType::bf16, shape);
    a.g = TensorRef::contiguous(g.data(), ElementType::bf16, shape);
    a.beta = TensorRef::contiguous(beta.data(), ElementType::bf16, {1, tokens, heads});
    a.a_log = TensorRef::contiguous(a_log.data(), ElementType::fp32, {heads});
    a.dt_bias = TensorRef::contiguous(dt_bias.data(), ElementType::fp32, {heads, 128});
    a.initial_state = TensorRef::contiguous(state.data(), ElementType::bf16, {1, heads, 128, 128});
    a.out = TensorRef::contiguous(out.data(), ElementType::bf16, shape);
    return a;
  }
};

void check_untouched(const Call& c, const std::vector<std::uint8_t>& state_before) {
  const std::vector<std::uint8_t> out = c.out.download_as<std::uint8_t>(c.out.bytes());
  bool poisoned = true;
  for (std::uint8_t b : out) {
    poisoned = poisoned && b == 0xff;
  }
  CHECK(poisoned);
  CHECK(c.state.download_as<std::uint8_t>(c.state.bytes()) == state_before);
}

} // namespace

TEST_CASE("gpu: refused calls launch nothing and leave outputs and state untouched", "[gpu][runtime][api]") {
  Call c(64, 2);
  const std::vector<std::uint8_t> state_before = c.state.download_as<std::uint8_t>(c.state.bytes());

  PrefillArgs unsafe = c.args();
  unsafe.lower_bound = -6.0; // outside the chunk-16 safe range |lb| < 5.4585
  CHECK_THROWS_WITH(recurrent_kda_prefill(unsafe), Catch::Contains("argument 'lower_bound'") &&
                                                       Catch::Contains("safe in BF16"));
  check_untouched(c, state_before);

  PrefillArgs overlapping = c.args();
  overlapping.out.data = c.q.data(); // the output would overwrite q
  CHECK_THROWS_WITH(recurrent_kda_prefill(overlapping), Catch::Contains("argument 'out'") &&
                                                            Catch::Contains("overlaps input 'q'"));
  check_untouched(c, state_before);

  Call decode(1, 2);
  CHECK_THROWS_WITH(recurrent_kda_prefill(decode.args()), Catch::Contains("decode, not prefill"));

  PrefillArgs host = c.args();
  std::vector<std::uint16_t> host_q(static_cast<std::size_t>(64 * 2 * 128));
  host.q.data = host_q.data(); // host memory
  CHECK_THROWS_WITH(recurrent_kda_prefill(host), Catch::Contains("argument 'q'") &&
                                                     Catch::Contains("is not device memory"));
  check_untouched(c, state_before);

  // The same call with a valid lower_bound runs and writes every output element.
  PrefillArgs ok = c.args();
  const PrefillResult r = recurrent_kda_prefill(ok);
  CHECK(r.out == c.out.data());
  const std::vector<std::uint8_t> out = c.out.download_as<std::uint8_t>(c.out.bytes());
  std::size_t still_poisoned = 0;
  for (std::size_t i = 0; i + 1 < out.size(); i += 2) {
    still_poisoned += out[i] == 0xff && out[i + 1] == 0xff;
  }
  CHECK(still_poisoned == 0);
}
