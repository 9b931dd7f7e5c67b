// check_prefill_args for the serving-engine arguments (issue 21) on the CPU:
// state pools (ssm_state_indices), seq_order and native checkpoints. Fake,
// aligned device addresses (never dereferenced); every refusal is a
// TensorError naming the argument.
#include "fake_args.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using namespace kda::test;
using Catch::Contains;

namespace {

constexpr std::int64_t k_h = 4;
constexpr std::int64_t k_slot_elems = k_h * 128 * 128; // elements of one pool slot

// Packed: 300 tokens, 3 sequences, an fp32 pool of 8 slots with a padded pitch.
PrefillArgs pooled(std::int64_t pitch = k_slot_elems + 4) {
  PrefillArgs a = fake_packed_args(300, k_h, 3, ElementType::i64);
  a.initial_state = fake_state(initial_state_slot, ElementType::fp32, 8, k_h);
  a.initial_state.strides = {pitch, 128 * 128, 128, 1};
  a.ssm_state_indices = TensorRef::contiguous(device0_slot(state_indices_slot), ElementType::i32, {3});
  return a;
}

PrefillArgs checkpointed(std::int64_t every = 32, std::int64_t rows = 20) {
  PrefillArgs a = fake_packed_args(300, k_h, 3, ElementType::i64);
  a.checkpoint_every_n_tokens = every;
  a.state_checkpoints = TensorRef::contiguous(device0_slot(checkpoints_slot), ElementType::bf16, {rows, k_h, 128, 128});
  a.checkpoint_cu_starts = TensorRef::contiguous(device0_slot(checkpoint_starts_slot), ElementType::i64, {4});
  return a;
}

void check_refused(const CheckOutcome& o, const std::string& argument, const std::string& text) {
  INFO("message: " << o.message);
  CHECK_FALSE(o.accepted);
  CHECK(o.argument == argument);
  CHECK_THAT(o.message, Contains(text));
}

} // namespace

TEST_CASE("check args: a state pool with a padded slot pitch is accepted", "[runtime][check_args][contract]") {
  const CheckOutcome o = check_fake(pooled());
  INFO(o.message);
  REQUIRE(o.accepted);
  CHECK(o.shape.state_pool);
  CHECK(o.shape.state_slot_stride == k_slot_elems + 4);
  CHECK(o.shape.state_in);
  CHECK(o.shape.state_dtype == StatePrecision::fp32);
  // without a pool the slots are the state's own sequences, one slot apart
  PrefillArgs plain = fake_packed_args(300, k_h, 3, ElementType::i64);
  plain.initial_state = fake_state(initial_state_slot, ElementType::bf16, 3, k_h);
  const CheckOutcome p = check_fake(plain);
  REQUIRE(p.accepted);
  CHECK_FALSE(p.shape.state_pool);
  CHECK(p.shape.state_slot_stride == k_slot_elems);
  // a contiguous pool, and a pool of one slot (any pitch)
  CHECK(check_fake(pooled(k_slot_elems)).accepted);
  PrefillArgs one = pooled(3);
  one.initial_state.shape[0] = 1;
  CHECK(check_fake(one).accepted);
}

TEST_CASE("check args: state pools that cannot work are refused", "[runtime][check_args][contract]") {
  SECTION("indices without a pool") {
    PrefillArgs a = pooled();
    a.initial_state = TensorRef();
    a.output_final_state = true;
    check_refused(check_fake(a), "ssm_state_indices", "given without initial_state");
  }
  SECTION("slot pitch below one slot") {
    check_refused(check_fake(pooled(k_slot_elems - 4)), "initial_state", "slot pitch 65532 elements is below one slot's 65536");
  }
  SECTION("slot pitch not a multiple of 16 bytes") {
    check_refused(check_fake(pooled(k_slot_elems + 1)), "initial_state", "(262148 bytes) is not a multiple of 16 bytes");
  }
  SECTION("a slot that is not contiguous") {
    PrefillArgs a = pooled();
    a.initial_state.strides = {2 * k_slot_elems, 128 * 128, 1, 128}; // transposed [V,K]
    check_refused(check_fake(a), "initial_state", "each pool slot [H, 128, 128] must be contiguous");
  }
  SECTION("a pool of the wrong head count") {
    PrefillArgs a = pooled();
    a.initial_state.shape = {8, k_h + 1, 128, 128};
    check_refused(check_fake(a), "initial_state", "expected a state pool [N_pool >= 1, 4, 128, 128]");
  }
  SECTION("a misaligned pool base") {
    PrefillArgs a = pooled();
    a.initial_state.data = device0_slot(initial_state_slot, 8);
    check_refused(check_fake(a), "initial_state", "is not 16-byte aligned");
  }
  SECTION("indices of the wrong dtype or size") {
    PrefillArgs a = pooled();
    a.ssm_state_indices.dtype = ElementType::i64;
    check_refused(check_fake(a), "ssm_state_indices", "expected dtype int32, got int64");
    a = pooled();
    a.ssm_state_indices.shape = {4};
    check_refused(check_fake(a), "ssm_state_indices", "expected shape [3], got [4]");
  }
  SECTION("indices in host memory") {
    PrefillArgs a = pooled();
    a.ssm_state_indices.data = host_address();
    check_refused(check_fake(a), "ssm_state_indices", "is not device memory");
  }
  SECTION("an output that overlaps the indices") {
    PrefillArgs a = pooled();
    a.out = TensorRef::contiguous(device0_slot(state_indices_slot), ElementType::bf16, a.v.shape);
    check_refused(check_fake(a), "out", "overlaps input 'ssm_state_indices'");
  }
}

TEST_CASE("check args: seq_order is for packed input", "[runtime][check_args][contract]") {
  PrefillArgs a = fake_packed_args(300, k_h, 3, ElementType::i32);
  a.seq_order = TensorRef::contiguous(device0_slot(seq_order_slot), ElementType::i32, {3});
  const CheckOutcome ok = check_fake(a);
  REQUIRE(ok.accepted);
  CHECK(ok.shape.seq_order);
  PrefillArgs wrong = a;
  wrong.seq_order.shape = {2};
  check_refused(check_fake(wrong), "seq_order", "expected shape [3], got [2]");
  wrong = a;
  wrong.seq_order.dtype = ElementType::i64;
  check_refused(check_fake(wrong), "seq_order", "expected dtype int32");
  PrefillArgs fixed = fake_fixed_args(3, 64, k_h);
  fixed.seq_order = a.seq_order;
  check_refused(check_fake(fixed), "seq_order", "is for packed input (cu_seqlens)");
}

TEST_CASE("check args: native checkpoints", "[runtime][check_args][contract]") {
  const CheckOutcome ok = check_fake(checkpointed());
  INFO(ok.message);
  REQUIRE(ok.accepted);
  CHECK(ok.shape.checkpoint_interval == 32);
  CHECK(check_fake(checkpointed(16)).accepted);
  CHECK(check_fake(checkpointed(48)).accepted); // eligibility by chunk size is the router's

  SECTION("the interval") {
    check_refused(check_fake(checkpointed(20)), "checkpoint_every_n_tokens", "must be a positive multiple of 16, got 20");
    check_refused(check_fake(checkpointed(-16)), "checkpoint_every_n_tokens", "must be a positive multiple of 16");
    PrefillArgs zero = checkpointed();
    zero.checkpoint_every_n_tokens = 0;
    check_refused(check_fake(zero), "checkpoint_every_n_tokens", "is 0 but state_checkpoints is given");
  }
  SECTION("the buffers") {
    PrefillArgs a = checkpointed();
    a.state_checkpoints = TensorRef();
    check_refused(check_fake(a), "state_checkpoints", "is required with checkpoint_every_n_tokens");
    a = checkpointed();
    a.checkpoint_cu_starts = TensorRef();
    check_refused(check_fake(a), "checkpoint_cu_starts", "is required");
    a = checkpointed();
    a.state_checkpoints.dtype = ElementType::fp32;
    check_refused(check_fake(a), "state_checkpoints", "expected dtype bf16, got fp32");
    a = checkpointed();
    a.state_checkpoints.shape = {20, k_h, 128, 64};
    check_refused(check_fake(a), "state_checkpoints", "expected shape [C, 4, 128, 128]");
    a = checkpointed();
    a.checkpoint_cu_starts.dtype = ElementType::i32;
    check_refused(check_fake(a), "checkpoint_cu_starts", "expected dtype int64, got int32");
    a = checkpointed();
    a.checkpoint_cu_starts.shape = {3};
    check_refused(check_fake(a), "checkpoint_cu_starts", "expected shape [4], got [3]");
  }
  SECTION("the fixed layout's row count is known and checked") {
    PrefillArgs f = fake_fixed_args(2, 100, k_h);
    f.checkpoint_every_n_tokens = 32;
    f.state_checkpoints = TensorRef::contiguous(device0_slot(checkpoints_slot), ElementType::bf16, {7, k_h, 128, 128});
    f.checkpoint_cu_starts = TensorRef::contiguous(device0_slot(checkpoint_starts_slot), ElementType::i64, {3});
    check_refused(check_fake(f), "state_checkpoints", "7 rows for 2 sequences of 100 tokens every 32: at least 8");
    f.state_checkpoints.shape[0] = 8;
    CHECK(check_fake(f).accepted);
  }
  SECTION("rows that overlap an input or the output") {
    PrefillArgs a = checkpointed();
    a.state_checkpoints.data = device0_slot(Slot::k_slot);
    check_refused(check_fake(a), "state_checkpoints", "overlaps input 'k'");
    a = checkpointed();
    a.out = TensorRef::contiguous(device0_slot(out_slot), ElementType::bf16, a.v.shape);
    a.state_checkpoints.data = device0_slot(out_slot, 4096);
    check_refused(check_fake(a), "state_checkpoints", "overlaps input 'out'");
    a = checkpointed();
    a.state_checkpoints.data = device0_slot(checkpoint_starts_slot);
    check_refused(check_fake(a), "state_checkpoints", "overlaps input 'checkpoint_cu_starts'");
  }
}
