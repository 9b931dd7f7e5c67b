// check_prefill_args and check_lower_bound on the CPU: fake, aligned device
// addresses (never dereferenced) classified by a fake pointer_device. Every
// refusal is a TensorError naming the argument, with expected vs actual.
#include "compiler/errors.hpp"
#include "fake_args.hpp"
#include "runtime/check_args.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace kda;
using namespace kda::test;
using Catch::Contains;

namespace {

// B = 2, T = 64, H = 4: q is [2, 64, 4, 128] bf16 (131,072 bytes).
constexpr std::int64_t k_b = 2;
constexpr std::int64_t k_t = 64;
constexpr std::int64_t k_h = 4;
constexpr std::uintptr_t k_q_bytes = k_b * k_t * k_h * 128 * 2;

PrefillArgs fixed() {
  return fake_fixed_args(k_b, k_t, k_h);
}

} // namespace

#define CHECK_REFUSED(outcome, name, text)                                                                    \
  do {                                                                                                       \
    const CheckOutcome& refused_ = (outcome);                                                                \
    INFO("message: " << refused_.message);                                                                   \
    CHECK_FALSE(refused_.accepted);                                                                          \
    CHECK(refused_.argument == (name));                                                                      \
    CHECK_THAT(refused_.message, Contains(text));                                                            \
  } while (false)

#define CHECK_ACCEPTED(outcome)                                                                               \
  do {                                                                                                       \
    const CheckOutcome& accepted_ = (outcome);                                                               \
    INFO("refused: " << accepted_.message);                                                                  \
    CHECK(accepted_.accepted);                                                                               \
  } while (false)

TEST_CASE("check args: the fake valid calls are accepted", "[runtime][check_args]") {
  CHECK_ACCEPTED(check_fake(fixed()));
  CHECK_ACCEPTED(check_fake(fake_packed_args(100, k_h, 3, ElementType::i32)));
}

TEST_CASE("check args: required tensors", "[runtime][check_args]") {
  SECTION("missing q") {
    PrefillArgs a = fixed();
    a.q.data = nullptr;
    CHECK_REFUSED(check_fake(a), "q", "argument 'q': is required");
  }
  SECTION("missing k, v, g, beta, A_log, dt_bias") {
    const std::vector<std::pair<const char*, TensorRef PrefillArgs::*>> members = {
        {"k", &PrefillArgs::k},       {"v", &PrefillArgs::v},         {"g", &PrefillArgs::g},
        {"beta", &PrefillArgs::beta}, {"A_log", &PrefillArgs::a_log}, {"dt_bias", &PrefillArgs::dt_bias}};
    for (const auto& [name, member] : members) {
      PrefillArgs a = fixed();
      (a.*member).data = nullptr;
      INFO(name);
      CHECK_REFUSED(check_fake(a), name, "is required");
    }
  }
}

TEST_CASE("check args: q, k, v, g dtype, shape, strides, alignment, head dim", "[runtime][check_args]") {
  SECTION("wrong dtype of k") {
    PrefillArgs a = fixed();
    a.k.dtype = ElementType::fp32;
    CHECK_REFUSED(check_fake(a), "k", "expected dtype bf16, got fp32");
  }
  SECTION("shape mismatch of v") {
    PrefillArgs a = fixed();
    a.v.shape = {2, 64, 3, 128};
    CHECK_REFUSED(check_fake(a), "v", "expected shape [2, 64, 4, 128], got [2, 64, 3, 128]");
  }
  SECTION("non-contiguous g") {
    PrefillArgs a = fixed();
    a.g.strides = {65536, 512, 128, 1}; // a batch stride of twice the batch row
    CHECK_REFUSED(check_fake(a), "g", "expected contiguous strides [32768, 512, 128, 1], got [65536, 512, 128, 1]");
  }
  SECTION("contiguous strides given explicitly are fine, and size-1 dims may have any stride") {
    PrefillArgs a = fixed();
    a.g.strides = {32768, 512, 128, 1};
    CHECK_ACCEPTED(check_fake(a));
    PrefillArgs b = fake_fixed_args(1, 64, 4);
    b.q.strides = {12345, 512, 128, 1};
    CHECK_ACCEPTED(check_fake(b));
  }
  SECTION("strides of the wrong rank") {
    PrefillArgs a = fixed();
    a.k.strides = {512, 128, 1};
    CHECK_REFUSED(check_fake(a), "k", "3 strides given for a rank-4 tensor");
  }
  SECTION("q not 16-byte aligned") {
    PrefillArgs a = fixed();
    a.q.data = device0_slot(q_slot, 8);
    CHECK_REFUSED(check_fake(a), "q", "data pointer 0x100000008 is not 16-byte aligned");
  }
  SECTION("head dim 64") {
    PrefillArgs a = fixed();
    for (TensorRef* t : {&a.q, &a.k, &a.v, &a.g}) {
      t->shape = {2, 64, 4, 64};
    }
    CHECK_REFUSED(check_fake(a), "q", "expected shape [B, T, H, 128], got [2, 64, 4, 64]");
  }
  SECTION("rank 3 q") {
    PrefillArgs a = fixed();
    a.q.shape = {128, 4, 128};
    CHECK_REFUSED(check_fake(a), "q", "expected shape [B, T, H, 128], got [128, 4, 128]");
  }
  SECTION("a zero size") {
    PrefillArgs a = fake_fixed_args(2, 64, 0);
    CHECK_REFUSED(check_fake(a), "q", "expected positive sizes, got [2, 64, 0, 128]");
  }
}

TEST_CASE("check args: beta strides", "[runtime][check_args]") {
  SECTION("row-strided beta with unit head stride is accepted") {
    PrefillArgs a = fixed();
    a.beta.strides = {k_t * 8, 8, 1};
    const CheckOutcome o = check_fake(a);
    CHECK_ACCEPTED(o);
    CHECK(o.shape.beta_token_stride == 8);
  }
  SECTION("non-unit head stride") {
    PrefillArgs a = fixed();
    a.beta.strides = {k_t * 8, 8, 2};
    CHECK_REFUSED(check_fake(a), "beta", "expected unit head stride, got stride 2");
  }
  SECTION("token stride smaller than H") {
    PrefillArgs a = fixed();
    a.beta.strides = {k_t * 2, 2, 1};
    CHECK_REFUSED(check_fake(a), "beta", "token stride 2 is smaller than the 4 heads of a row");
  }
  SECTION("batch stride inconsistent with T x token stride for B > 1") {
    PrefillArgs a = fixed();
    a.beta.strides = {k_t * 8 + 8, 8, 1};
    CHECK_REFUSED(check_fake(a), "beta", "batch stride 520 must be T x token stride = 512");
  }
  SECTION("the batch stride does not matter for B = 1") {
    PrefillArgs a = fake_fixed_args(1, k_t, k_h);
    a.beta.strides = {999, 8, 1};
    const CheckOutcome o = check_fake(a);
    CHECK_ACCEPTED(o);
    CHECK(o.shape.beta_token_stride == 8);
  }
  SECTION("wrong shape and dtype") {
    PrefillArgs a = fixed();
    a.beta.shape = {2, 64, 4, 1};
    CHECK_REFUSED(check_fake(a), "beta", "expected shape [2, 64, 4], got [2, 64, 4, 1]");
    PrefillArgs b = fixed();
    b.beta.dtype = ElementType::fp32;
    CHECK_REFUSED(check_fake(b), "beta", "expected dtype bf16, got fp32");
  }
  SECTION("strides of the wrong rank") {
    PrefillArgs a = fixed();
    a.beta.strides = {8, 1};
    CHECK_REFUSED(check_fake(a), "beta", "2 strides given for a rank-3 tensor");
  }
}

TEST_CASE("check args: A_log, dt_bias, scale", "[runtime][check_args]") {
  SECTION("A_log wrong shape and dtype") {
    PrefillArgs a = fixed();
    a.a_log.shape = {k_h, 1};
    CHECK_REFUSED(check_fake(a), "A_log", "expected shape [4], got [4, 1]");
    PrefillArgs b = fixed();
    b.a_log.dtype = ElementType::bf16;
    CHECK_REFUSED(check_fake(b), "A_log", "expected dtype fp32, got bf16");
  }
  SECTION("dt_bias [H,128] and [H*128] accepted, [H,64] refused") {
    PrefillArgs a = fixed();
    a.dt_bias.shape = {k_h, 128};
    CHECK_ACCEPTED(check_fake(a));
    a.dt_bias.shape = {k_h * 128};
    CHECK_ACCEPTED(check_fake(a));
    a.dt_bias.shape = {k_h, 64};
    CHECK_REFUSED(check_fake(a), "dt_bias", "expected shape [4, 128] or [512], got [4, 64]");
  }
  SECTION("dt_bias wrong dtype, non-contiguous") {
    PrefillArgs a = fixed();
    a.dt_bias.dtype = ElementType::bf16;
    CHECK_REFUSED(check_fake(a), "dt_bias", "expected dtype fp32, got bf16");
    PrefillArgs b = fixed();
    b.dt_bias.strides = {256, 1};
    CHECK_REFUSED(check_fake(b), "dt_bias", "expected contiguous strides [128, 1], got [256, 1]");
  }
  SECTION("non-finite scale") {
    for (double s : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
      PrefillArgs a = fixed();
      a.scale = s;
      INFO(s);
      CHECK_REFUSED(check_fake(a), "scale", "must be finite, got");
    }
  }
}

TEST_CASE("check args: fixed and packed layout rules", "[runtime][check_args]") {
  SECTION("fixed layout with T = 1 is decode") {
    CHECK_REFUSED(check_fake(fake_fixed_args(2, 1, k_h)), "q", "T = 1 is decode, not prefill");
  }
  SECTION("packed: int32 and int64 offsets accepted") {
    CHECK_ACCEPTED(check_fake(fake_packed_args(100, k_h, 3, ElementType::i32)));
    CHECK_ACCEPTED(check_fake(fake_packed_args(100, k_h, 3, ElementType::i64)));
  }
  SECTION("packed: one token for one sequence is decode, two are prefill") {
    CHECK_REFUSED(check_fake(fake_packed_args(1, k_h, 1, ElementType::i32)), "q",
                  "1 tokens for 1 sequences is decode, not prefill");
    CHECK_ACCEPTED(check_fake(fake_packed_args(2, k_h, 1, ElementType::i32)));
  }
  SECTION("packed: wrong offsets dtype") {
    for (ElementType e : {ElementType::fp32, ElementType::bf16}) {
      PrefillArgs a = fake_packed_args(100, k_h, 3, e);
      CHECK_REFUSED(check_fake(a), "cu_seqlens", "expected dtype int32 or int64, got " + to_string(e));
    }
  }
  SECTION("packed: wrong offsets shape") {
    PrefillArgs a = fake_packed_args(100, k_h, 3, ElementType::i32);
    a.cu_seqlens.shape = {1};
    CHECK_REFUSED(check_fake(a), "cu_seqlens", "expected shape [N + 1] with N >= 1, got [1]");
    a.cu_seqlens.shape = {2, 4};
    CHECK_REFUSED(check_fake(a), "cu_seqlens", "expected shape [N + 1] with N >= 1, got [2, 4]");
    a.cu_seqlens.shape = {4};
    a.cu_seqlens.strides = {2};
    CHECK_REFUSED(check_fake(a), "cu_seqlens", "expected contiguous strides [1], got [2]");
  }
  SECTION("packed with B > 1") {
    PrefillArgs a = fixed();
    a.cu_seqlens = TensorRef::contiguous(device0_slot(cu_seqlens_slot), ElementType::i32, {3});
    CHECK_REFUSED(check_fake(a), "q", "packed input (cu_seqlens given) needs B = 1, got B = 2");
  }
  SECTION("packed with total tokens <= N is decode") {
    CHECK_REFUSED(check_fake(fake_packed_args(3, k_h, 3, ElementType::i64)), "q",
                  "3 tokens for 3 sequences is decode, not prefill");
    CHECK_REFUSED(check_fake(fake_packed_args(2, k_h, 3, ElementType::i64)), "q",
                  "2 tokens for 3 sequences is decode");
    CHECK_ACCEPTED(check_fake(fake_packed_args(4, k_h, 3, ElementType::i64)));
  }
}

TEST_CASE("check args: heads and sequences fit the kernels' grids", "[runtime][check_args]") {
  CHECK_ACCEPTED(check_fake(fake_fixed_args(1, 2, 32767)));
  CHECK_REFUSED(check_fake(fake_fixed_args(1, 2, 32768)), "q", "32768 heads: at most 32767 are supported");
  PrefillArgs b = fixed();
  b.q.shape[0] = std::int64_t{1} << 31; // never dereferenced: refused on the shape alone
  CHECK_REFUSED(check_fake(b), "q", "B = 2147483648: at most 2147483647 sequences are supported");
  PrefillArgs n = fake_packed_args(100, k_h, 3, ElementType::i32);
  n.cu_seqlens.shape[0] = (std::int64_t{1} << 31) + 1;
  CHECK_REFUSED(check_fake(n), "cu_seqlens", "2147483648 sequences: at most 2147483647 are supported");
}

TEST_CASE("check args: initial and final state", "[runtime][check_args]") {
  SECTION("initial_state bf16 and fp32 with the right shape") {
    for (ElementType e : {ElementType::bf16, ElementType::fp32}) {
      PrefillArgs a = fixed();
      a.initial_state = fake_state(initial_state_slot, e, k_b, k_h);
      INFO(to_string(e));
      CHECK_ACCEPTED(check_fake(a));
    }
  }
  SECTION("initial_state wrong shape") {
    PrefillArgs a = fixed();
    a.initial_state = fake_state(initial_state_slot, ElementType::fp32, k_b, k_h);
    a.initial_state.shape = {k_b, k_h, 128, 64};
    CHECK_REFUSED(check_fake(a), "initial_state", "expected shape [2, 4, 128, 128], got [2, 4, 128, 64]");
  }
  SECTION("packed initial_state has N rows, not B") {
    PrefillArgs a = fake_packed_args(100, k_h, 3, ElementType::i32);
    a.initial_state = fake_state(initial_state_slot, ElementType::bf16, 1, k_h);
    CHECK_REFUSED(check_fake(a), "initial_state", "expected shape [3, 4, 128, 128], got [1, 4, 128, 128]");
    a.initial_state = fake_state(initial_state_slot, ElementType::bf16, 3, k_h);
    CHECK_ACCEPTED(check_fake(a));
  }
  SECTION("initial_state wrong dtype, misaligned, strided") {
    PrefillArgs a = fixed();
    a.initial_state = fake_state(initial_state_slot, ElementType::i32, k_b, k_h);
    CHECK_REFUSED(check_fake(a), "initial_state", "expected dtype bf16 or fp32, got int32");
    a.initial_state = fake_state(initial_state_slot, ElementType::fp32, k_b, k_h);
    a.initial_state.data = device0_slot(initial_state_slot, 4);
    CHECK_REFUSED(check_fake(a), "initial_state", "is not 16-byte aligned");
    a.initial_state = fake_state(initial_state_slot, ElementType::fp32, k_b, k_h);
    a.initial_state.strides = {k_h * 128 * 128, 128 * 128, 1, 128}; // transposed [V, K]
    CHECK_REFUSED(check_fake(a), "initial_state", "expected contiguous strides");
  }
  SECTION("final_state with initial_state") {
    PrefillArgs a = fixed();
    a.initial_state = fake_state(initial_state_slot, ElementType::fp32, k_b, k_h);
    a.final_state = fake_state(final_state_slot, ElementType::fp32, k_b, k_h);
    a.output_final_state = true;
    CHECK_REFUSED(check_fake(a), "final_state", "must not be given with initial_state");
  }
  SECTION("final_state without output_final_state") {
    PrefillArgs a = fixed();
    a.final_state = fake_state(final_state_slot, ElementType::bf16, k_b, k_h);
    CHECK_REFUSED(check_fake(a), "final_state", "given but output_final_state is false");
    a.output_final_state = true;
    CHECK_ACCEPTED(check_fake(a));
  }
  SECTION("final_state wrong shape or dtype") {
    PrefillArgs a = fixed();
    a.output_final_state = true;
    a.final_state = fake_state(final_state_slot, ElementType::bf16, k_b + 1, k_h);
    CHECK_REFUSED(check_fake(a), "final_state", "expected shape [2, 4, 128, 128], got [3, 4, 128, 128]");
    a.final_state = fake_state(final_state_slot, ElementType::i64, k_b, k_h);
    CHECK_REFUSED(check_fake(a), "final_state", "expected dtype bf16 or fp32, got int64");
  }
}

TEST_CASE("check args: outputs never overlap inputs", "[runtime][check_args]") {
  const std::vector<std::int64_t> out_shape{k_b, k_t, k_h, 128};
  SECTION("out overlapping q") {
    PrefillArgs a = fixed();
    a.out = TensorRef::contiguous(device0_slot(q_slot, 16), ElementType::bf16, out_shape);
    CHECK_REFUSED(check_fake(a), "out", "overlaps input 'q'");
  }
  SECTION("out overlapping the last 16 bytes of q, and out right after q") {
    PrefillArgs a = fixed();
    a.out = TensorRef::contiguous(device0_slot(q_slot, k_q_bytes - 16), ElementType::bf16, out_shape);
    CHECK_REFUSED(check_fake(a), "out", "overlaps input 'q'");
    a.out.data = device0_slot(q_slot, k_q_bytes);
    CHECK_ACCEPTED(check_fake(a));
  }
  SECTION("out overlapping initial_state") {
    PrefillArgs a = fixed();
    a.initial_state = fake_state(initial_state_slot, ElementType::fp32, k_b, k_h);
    a.out = TensorRef::contiguous(device0_slot(initial_state_slot, 65536), ElementType::bf16, out_shape);
    CHECK_REFUSED(check_fake(a), "out", "overlaps input 'initial_state'");
  }
  SECTION("out wrong dtype or shape") {
    PrefillArgs a = fixed();
    a.out = TensorRef::contiguous(device0_slot(out_slot), ElementType::fp32, out_shape);
    CHECK_REFUSED(check_fake(a), "out", "expected dtype bf16, got fp32");
    a.out = TensorRef::contiguous(device0_slot(out_slot), ElementType::bf16, {k_b * k_t, k_h, 128});
    CHECK_REFUSED(check_fake(a), "out", "expected shape [2, 64, 4, 128], got [128, 4, 128]");
  }
  SECTION("final_state overlapping out") {
    PrefillArgs a = fixed();
    a.out = TensorRef::contiguous(device0_slot(out_slot), ElementType::bf16, out_shape);
    a.output_final_state = true;
    a.final_state = fake_state(out_slot, ElementType::fp32, k_b, k_h);
    a.final_state.data = device0_slot(out_slot, 4096);
    CHECK_REFUSED(check_fake(a), "final_state", "overlaps input 'out'");
  }
  SECTION("final_state overlapping an input") {
    PrefillArgs a = fixed();
    a.output_final_state = true;
    a.final_state = fake_state(dt_bias_slot, ElementType::fp32, k_b, k_h);
    CHECK_REFUSED(check_fake(a), "final_state", "overlaps input 'dt_bias'");
  }
}

TEST_CASE("check args: device of every tensor", "[runtime][check_args]") {
  SECTION("a tensor on another device") {
    PrefillArgs a = fixed();
    a.v.data = device1_address();
    CHECK_REFUSED(check_fake(a), "v", "expected memory on device 0 (the current context), got device 1");
  }
  SECTION("host memory") {
    PrefillArgs a = fixed();
    a.a_log.data = host_address();
    CHECK_REFUSED(check_fake(a), "A_log", "is not device memory");
  }
  SECTION("optional tensors are checked too") {
    PrefillArgs a = fake_packed_args(100, k_h, 3, ElementType::i64);
    a.cu_seqlens.data = host_address();
    CHECK_REFUSED(check_fake(a), "cu_seqlens", "is not device memory");
    PrefillArgs b = fixed();
    b.output_final_state = true;
    b.final_state = fake_state(final_state_slot, ElementType::bf16, k_b, k_h);
    b.final_state.data = device1_address();
    CHECK_REFUSED(check_fake(b), "final_state", "got device 1");
  }
  SECTION("the current device is a parameter") {
    try {
      check_prefill_args(fixed(), 1, fake_pointer_device);
      FAIL("accepted device-0 memory for device 1");
    } catch (const TensorError& e) {
      CHECK(e.argument() == "q");
      CHECK_THAT(e.what(), Contains("expected memory on device 1 (the current context), got device 0"));
    }
  }
}

TEST_CASE("check args: derived problem shape, fixed layout", "[runtime][check_args]") {
  PrefillArgs a = fixed();
  a.beta.strides = {k_t * 16, 16, 1};
  a.initial_state = fake_state(initial_state_slot, ElementType::fp32, k_b, k_h);
  const CheckOutcome o = check_fake(a);
  REQUIRE(o.accepted);
  const ProblemShape& p = o.shape;
  CHECK(p.layout == LayoutKind::fixed);
  CHECK(p.batch == 2);
  CHECK(p.seq_len == 64);
  CHECK(p.total_tokens == 128);
  CHECK(p.heads == 4);
  CHECK(p.num_seqs == 2);
  CHECK_FALSE(p.offsets_i64);
  CHECK(p.state_in);
  CHECK(p.state_out);
  CHECK(p.state_dtype == StatePrecision::fp32);
  CHECK(p.beta_token_stride == 16);

  const CheckOutcome plain = check_fake(fixed());
  REQUIRE(plain.accepted);
  CHECK_FALSE(plain.shape.state_in);
  CHECK_FALSE(plain.shape.state_out);
  CHECK(plain.shape.beta_token_stride == 4); // contiguous beta: H
}

TEST_CASE("check args: derived problem shape, packed layout", "[runtime][check_args]") {
  SECTION("int64 offsets, allocated bf16 final state") {
    PrefillArgs a = fake_packed_args(100, k_h, 3, ElementType::i64);
    a.output_final_state = true;
    const CheckOutcome o = check_fake(a);
    REQUIRE(o.accepted);
    const ProblemShape& p = o.shape;
    CHECK(p.layout == LayoutKind::packed);
    CHECK(p.batch == 1);
    CHECK(p.seq_len == 100);
    CHECK(p.total_tokens == 100);
    CHECK(p.heads == 4);
    CHECK(p.num_seqs == 3);
    CHECK(p.offsets_i64);
    CHECK_FALSE(p.state_in);
    CHECK(p.state_out);
    CHECK(p.state_dtype == StatePrecision::bf16);
    CHECK(p.beta_token_stride == 4);
  }
  SECTION("int32 offsets, caller's fp32 final state") {
    PrefillArgs a = fake_packed_args(100, k_h, 3, ElementType::i32);
    a.output_final_state = true;
    a.final_state = fake_state(final_state_slot, ElementType::fp32, 3, k_h);
    const CheckOutcome o = check_fake(a);
    REQUIRE(o.accepted);
    CHECK_FALSE(o.shape.offsets_i64);
    CHECK_FALSE(o.shape.state_in);
    CHECK(o.shape.state_out);
    CHECK(o.shape.state_dtype == StatePrecision::fp32);
  }
}

TEST_CASE("check lower_bound: finite, negative, inside the schedule's safe range", "[runtime][check_args]") {
  const double safe = 5.4585;
  CHECK_NOTHROW(check_lower_bound(-5.0, -5.0, 0.0, safe, "portable_c16"));
  CHECK_NOTHROW(check_lower_bound(-0.001, -5.0, 0.0, safe, "portable_c16"));
  CHECK_NOTHROW(check_lower_bound(-5.4, -6.0, 0.0, safe, "portable_c16"));

  const auto refusal = [&](double lb, double lo, double hi) -> std::string {
    try {
      check_lower_bound(lb, lo, hi, safe, "portable_c16");
    } catch (const TensorError& e) {
      CHECK(e.argument() == "lower_bound");
      return e.what();
    }
    return "accepted";
  };
  SECTION("-5.5 is outside the range and the safe magnitude") {
    const std::string m = refusal(-5.5, -5.0, 0.0);
    CHECK_THAT(m, Contains("-5.5 is outside the range schedule portable_c16 makes safe"));
    CHECK_THAT(m, Contains("[-5, 0)"));
    CHECK_THAT(m, Contains("|lower_bound| < 5.4585"));
  }
  SECTION("inside the eligibility range but not inside the safe magnitude") {
    const std::string m = refusal(-5.5, -6.0, 0.0);
    CHECK_THAT(m, Contains("outside the range schedule portable_c16 makes safe"));
    CHECK_THAT(m, Contains("|lower_bound| < 5.4585"));
  }
  SECTION("0, +1, NaN, -inf") {
    for (double lb : {0.0, 1.0, std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()}) {
      INFO(lb);
      CHECK_THAT(refusal(lb, -5.0, 0.0), Contains("must be finite and negative, got"));
    }
  }
}

TEST_CASE("check args: initial_state is written in place, so it must not overlap an input",
          "[runtime][check_args]") {
  PrefillArgs a = fixed();
  a.initial_state = fake_state(q_slot, ElementType::fp32, k_b, k_h); // the state's bytes are q's bytes
  CHECK_REFUSED(check_fake(a), "initial_state", "overlaps input 'q'");
  PrefillArgs b = fixed();
  b.initial_state = fake_state(dt_bias_slot, ElementType::bf16, k_b, k_h);
  CHECK_REFUSED(check_fake(b), "initial_state", "overlaps input 'dt_bias'");
}

TEST_CASE("check args: beta, A_log, dt_bias, cu_seqlens must be element-aligned", "[runtime][check_args]") {
  PrefillArgs a = fixed();
  a.beta.data = device0_slot(beta_slot, 1);
  CHECK_REFUSED(check_fake(a), "beta", "aligned");
  PrefillArgs b = fixed();
  b.a_log.data = device0_slot(a_log_slot, 2);
  CHECK_REFUSED(check_fake(b), "A_log", "aligned");
  PrefillArgs c = fixed();
  c.dt_bias.data = device0_slot(dt_bias_slot, 1);
  CHECK_REFUSED(check_fake(c), "dt_bias", "aligned");
  PrefillArgs d = fake_packed_args(100, k_h, 3, ElementType::i64);
  d.cu_seqlens.data = device0_slot(cu_seqlens_slot, 4);
  CHECK_REFUSED(check_fake(d), "cu_seqlens", "aligned");
}
