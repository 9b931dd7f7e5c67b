/// \file
/// Prefill arguments with fake device pointers for the CPU-only runtime tests:
/// addresses are never dereferenced, only compared, aligned and classified by
/// fake_pointer_device (a stand-in for cuPointerGetAttribute).
#pragma once

#include "runtime/check_args.hpp"
#include "kdajit/prefill_args.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kda::test {

/// Device 0 owns [k_device0_begin, k_device0_end), device 1 owns
/// [k_device1_begin, k_device1_end); everything else is host memory.
inline constexpr std::uintptr_t k_device0_begin = 0x0000'0001'0000'0000;
inline constexpr std::uintptr_t k_device0_end = 0x0000'0100'0000'0000;
inline constexpr std::uintptr_t k_device1_begin = 0x0000'0200'0000'0000;
inline constexpr std::uintptr_t k_device1_end = 0x0000'0300'0000'0000;
inline constexpr std::uintptr_t k_host_address = 0x0000'7f00'0000'0000;

/// Slot i of device 0: 256 MiB apart, 16-byte (indeed 256 MiB) aligned.
enum Slot { q_slot, k_slot, v_slot, g_slot, beta_slot, a_log_slot, dt_bias_slot, initial_state_slot, cu_seqlens_slot,
            out_slot, final_state_slot, state_indices_slot, seq_order_slot, checkpoints_slot, checkpoint_starts_slot };
const void* device0_slot(int slot, std::uintptr_t byte_offset = 0);
const void* device1_address();
const void* host_address();
const void* at_address(std::uintptr_t address);

/// Device 0 for the device-0 range, 1 for the device-1 range, nothing else.
std::optional<int> fake_pointer_device(const void* p);

/// A valid fixed-layout call: q, k, v, g [B,T,H,128], beta [B,T,H], A_log [H],
/// dt_bias [H,128]; no state, no output tensor.
PrefillArgs fake_fixed_args(std::int64_t batch, std::int64_t seq_len, std::int64_t heads);

/// A valid packed call: B = 1, T tokens, N sequences, cu_seqlens [N+1] of `offsets`.
PrefillArgs fake_packed_args(std::int64_t tokens, std::int64_t heads, std::int64_t num_seqs, ElementType offsets);

/// A contiguous [N,H,128,128] state of `dtype` in `slot`.
TensorRef fake_state(int slot, ElementType dtype, std::int64_t num_seqs, std::int64_t heads);

/// What check_prefill_args did with the arguments: the refused argument and
/// message, or accepted (argument empty) with the derived shape.
struct CheckOutcome {
  bool accepted = false;
  std::string argument;
  std::string message;
  ProblemShape shape;
};
CheckOutcome check_fake(const PrefillArgs& args);

} // namespace kda::test
