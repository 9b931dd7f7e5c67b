// On the GPU: calls the API must refuse are refused before any launch, with a
// TensorError naming the argument, and the caller's output and state stay
// bit-identical (poisoned output stays poisoned).
#include "device_array.hpp"
#include "kdajit/kda.hpp"
#include "c_args.hpp"

#include "compiler/errors.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

using namespace kda;
using kda::test::DeviceArray;
using kda::test::c_args;

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

TEST_CASE("gpu: refused serving-engine arguments launch nothing and leave every buffer untouched",
          "[gpu][runtime][api][contract]") {
  Call c(64, 2);
  const std::vector<std::uint8_t> state_before = c.state.download_as<std::uint8_t>(c.state.bytes());
  DeviceArray pool(3 * (2 * 128 * 128 + 8) * 2);
  pool.poison(0x3c);
  DeviceArray indices(4);
  indices.poison(0);
  DeviceArray rows(8 * 2 * 128 * 128 * 2);
  rows.poison(0xff);
  DeviceArray starts(16);
  starts.poison(0);
  auto rows_poisoned = [&] {
    const std::vector<std::uint8_t> b = rows.download_as<std::uint8_t>(rows.bytes());
    return std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0xff; });
  };

  PrefillArgs misaligned = c.args();
  misaligned.initial_state = TensorRef::contiguous(pool.data(), ElementType::bf16, {3, 2, 128, 128});
  misaligned.initial_state.strides = {2 * 128 * 128 + 1, 128 * 128, 128, 1}; // a pitch of 2 bytes past 16
  misaligned.ssm_state_indices = TensorRef::contiguous(indices.data(), ElementType::i32, {1});
  CHECK_THROWS_WITH(recurrent_kda_prefill(misaligned), Catch::Contains("argument 'initial_state'") &&
                                                           Catch::Contains("not a multiple of 16 bytes"));
  check_untouched(c, state_before);

  PrefillArgs overlapping = c.args();
  overlapping.checkpoint_every_n_tokens = 32;
  overlapping.state_checkpoints = TensorRef::contiguous(c.v.data(), ElementType::bf16, {2, 2, 128, 128});
  overlapping.checkpoint_cu_starts = TensorRef::contiguous(starts.data(), ElementType::i64, {2});
  CHECK_THROWS_WITH(recurrent_kda_prefill(overlapping), Catch::Contains("argument 'state_checkpoints'") &&
                                                            Catch::Contains("overlaps input 'v'"));
  check_untouched(c, state_before);

  // a forced schedule whose chunk does not divide the interval is refused with the reason
  PrefillArgs interval = c.args();
  interval.checkpoint_every_n_tokens = 48;
  interval.state_checkpoints = TensorRef::contiguous(rows.data(), ElementType::bf16, {8, 2, 128, 128});
  interval.checkpoint_cu_starts = TensorRef::contiguous(starts.data(), ElementType::i64, {2});
  PrefillOptions c32;
  c32.schedule = "sm90_wgmma_c32";
  CHECK_THROWS_WITH(recurrent_kda_prefill(interval, c32),
                    Catch::Contains("checkpoint interval 48 is not a multiple of its chunk size 32"));
  check_untouched(c, state_before);
  CHECK(rows_poisoned());

  // through the C API: its new fields reach the checks (seq_order needs packed input)
  PrefillArgs fixed_with_order = c.args();
  fixed_with_order.seq_order = TensorRef::contiguous(indices.data(), ElementType::i32, {1});
  const kda_prefill_args ca = c_args(fixed_with_order);
  CHECK(kda_recurrent_prefill(&ca, nullptr, nullptr, nullptr, nullptr) == KDA_ERROR_TENSOR);
  CHECK_THAT(std::string(kda_last_error()), Catch::Contains("argument 'seq_order': is for packed input"));
  check_untouched(c, state_before);
}

// seq_order is read on the device, never on the host (a caller contract): an
// order that names sequence 0 twice and sequence 2 never leaves sequence 2's
// output rows as they were, which shows the kernels take the caller's order.
TEST_CASE("gpu: the kernels take the sequences in the caller's seq_order", "[gpu][runtime][contract]") {
  Call c(96, 2); // packed: sequences of 32, 32, 32 tokens
  const std::vector<std::int64_t> offsets = {0, 32, 64, 96};
  DeviceArray cu = DeviceArray::from(offsets);
  const std::vector<std::int32_t> order = {0, 0, 1};
  DeviceArray seq_order = DeviceArray::from(order);
  for (const char* schedule : {"sm90_wgmma_c32", "portable_c16"}) {
    INFO(schedule);
    c.out.poison(0xff);
    PrefillArgs a = c.args();
    a.initial_state = TensorRef(); // no state (Call's holds one sequence's)
    a.cu_seqlens = TensorRef::contiguous(cu.data(), ElementType::i64, {4});
    a.seq_order = TensorRef::contiguous(seq_order.data(), ElementType::i32, {3});
    PrefillOptions options;
    options.schedule = schedule;
    recurrent_kda_prefill(a, options);
    const std::vector<std::uint16_t> out = c.out.download_as<std::uint16_t>(96 * 2 * 128);
    auto poisoned_rows = [&](std::size_t begin, std::size_t end) {
      std::size_t n = 0;
      for (std::size_t i = begin * 2 * 128; i < end * 2 * 128; ++i) {
        n += out[i] == 0xffff ? 1 : 0;
      }
      return n;
    };
    CHECK(poisoned_rows(0, 64) == 0);               // sequences 0 and 1 computed
    CHECK(poisoned_rows(64, 96) == 32 * 2 * 128);   // sequence 2 never taken
  }
}
