#include "fake_args.hpp"

#include "compiler/errors.hpp"

namespace kda::test {

const void* at_address(std::uintptr_t address) {
  return reinterpret_cast<const void*>(address);
}

const void* device0_slot(int slot, std::uintptr_t byte_offset) {
  return at_address(k_device0_begin + static_cast<std::uintptr_t>(slot) * 0x1000'0000 + byte_offset);
}

const void* device1_address() {
  return at_address(k_device1_begin + 0x1000'0000);
}

const void* host_address() {
  return at_address(k_host_address);
}

std::optional<int> fake_pointer_device(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (a >= k_device0_begin && a < k_device0_end) {
    return 0;
  }
  if (a >= k_device1_begin && a < k_device1_end) {
    return 1;
  }
  return std::nullopt;
}

PrefillArgs fake_fixed_args(std::int64_t batch, std::int64_t seq_len, std::int64_t heads) {
  PrefillArgs a;
  const std::vector<std::int64_t> qkvg{batch, seq_len, heads, 128};
  a.q = TensorRef::contiguous(device0_slot(q_slot), ElementType::bf16, qkvg);
  a.k = TensorRef::contiguous(device0_slot(k_slot), ElementType::bf16, qkvg);
  a.v = TensorRef::contiguous(device0_slot(v_slot), ElementType::bf16, qkvg);
  a.g = TensorRef::contiguous(device0_slot(g_slot), ElementType::bf16, qkvg);
  a.beta = TensorRef::contiguous(device0_slot(beta_slot), ElementType::bf16, {batch, seq_len, heads});
  a.a_log = TensorRef::contiguous(device0_slot(a_log_slot), ElementType::fp32, {heads});
  a.dt_bias = TensorRef::contiguous(device0_slot(dt_bias_slot), ElementType::fp32, {heads, 128});
  return a;
}

PrefillArgs fake_packed_args(std::int64_t tokens, std::int64_t heads, std::int64_t num_seqs, ElementType offsets) {
  PrefillArgs a = fake_fixed_args(1, tokens, heads);
  a.cu_seqlens = TensorRef::contiguous(device0_slot(cu_seqlens_slot), offsets, {num_seqs + 1});
  return a;
}

TensorRef fake_state(int slot, ElementType dtype, std::int64_t num_seqs, std::int64_t heads) {
  return TensorRef::contiguous(device0_slot(slot), dtype, {num_seqs, heads, 128, 128});
}

CheckOutcome check_fake(const PrefillArgs& args) {
  CheckOutcome o;
  try {
    o.shape = check_prefill_args(args, 0, fake_pointer_device);
    o.accepted = true;
  } catch (const TensorError& e) {
    o.argument = e.argument();
    o.message = e.what();
  }
  return o;
}

} // namespace kda::test
