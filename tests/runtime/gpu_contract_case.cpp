#include "gpu_contract_case.hpp"

#include "device_array.hpp"
#include "device_inputs.hpp"
#include "device_values.hpp"
#include "reference/sequences.hpp"
#include "reference/token_reference.hpp"
#include "kdajit/kda.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

namespace kda::test {
namespace {

using reference::OwnedState;
using reference::StateDtype;

constexpr std::int64_t k_state = 128 * 128;
constexpr std::uint8_t k_pad_byte = 0xab; // pool padding: must keep its bytes

void mix(std::uint64_t& hash, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    hash = (hash ^ p[i]) * 0x100000001b3ULL;
  }
}

} // namespace

std::vector<std::int32_t> random_order(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

ContractReport run_contract_case(const ContractCase& c) {
  INFO("case " << c.label);
  reference::testing::RandomProblem problem(c.spec, c.seed);
  reference::PrefillInputs inputs = problem.inputs();
  const std::int64_t n_seq = problem.sequences();
  const std::int64_t heads = c.spec.heads;
  const std::int64_t batch = c.spec.batch;
  const std::int64_t tokens = c.spec.tokens;
  const bool pool = c.pool_slots > 0;
  REQUIRE((!pool || (c.initial_state && c.pool_slots >= n_seq)));
  const std::int64_t slots = pool ? c.pool_slots : n_seq;
  const StateDtype dtype = c.fp32_state ? StateDtype::fp32 : StateDtype::bf16;
  const std::size_t esize = c.fp32_state ? 4 : 2;

  // Slot of each sequence: a random injection into the pool, or the sequence itself.
  std::vector<std::int32_t> slot_of(static_cast<std::size_t>(n_seq));
  std::iota(slot_of.begin(), slot_of.end(), 0);
  if (pool) {
    std::vector<std::int32_t> all = random_order(slots, c.seed * 31 + 7);
    std::copy_n(all.begin(), n_seq, slot_of.begin());
  }

  // Reference (fp64) on a compact copy of the pool.
  std::mt19937_64 rng(c.seed * 7919 + 17);
  OwnedState initial = reference::testing::random_state(dtype, slots, heads, rng);
  OwnedState reference_state = initial;
  reference::PrefillOptions options;
  options.lower_bound = -5.0;
  if (c.initial_state) {
    inputs.initial_state = reference_state.view(slots);
    if (pool) {
      inputs.ssm_state_indices = slot_of;
    }
  }
  options.checkpoints.every_n_tokens = c.checkpoint_every;
  const reference::PrefillResult ref = reference::run_reference_prefill(inputs, options);
  const std::vector<reference::SequenceRange> ranges = reference::sequence_ranges(inputs);

  // Device: the pool with its padded pitch, padding bytes set to k_pad_byte.
  const DeviceInputs device(problem);
  const std::int64_t slot_elems = heads * k_state;
  const std::int64_t pitch = slot_elems + c.pool_pitch_pad;
  std::vector<std::uint8_t> state_before(static_cast<std::size_t>(slots * pitch) * esize, k_pad_byte);
  for (std::int64_t s = 0; s < slots; ++s) {
    const void* src = c.fp32_state ? static_cast<const void*>(initial.fp32.data() + s * slot_elems)
                                   : static_cast<const void*>(initial.bf16.data() + s * slot_elems);
    std::memcpy(state_before.data() + static_cast<std::size_t>(s * pitch) * esize, src,
                static_cast<std::size_t>(slot_elems) * esize);
  }
  DeviceArray state = DeviceArray::from(state_before);
  DeviceArray indices = DeviceArray::from(slot_of);
  DeviceArray order = DeviceArray::from(c.seq_order);
  const std::int64_t rows = c.checkpoint_every > 0 ? ref.checkpoint_cu_starts.back() : 0;
  const std::int64_t row_capacity = c.checkpoint_every > 0 ? rows + c.spare_checkpoint_rows : 0;
  DeviceArray checkpoints(static_cast<std::size_t>(row_capacity * heads * k_state) * 2);
  checkpoints.poison();
  DeviceArray starts = DeviceArray::from(ref.checkpoint_cu_starts);
  const std::size_t out_elems = static_cast<std::size_t>(batch * tokens * heads * 128);
  DeviceArray out(out_elems * 2);
  out.poison();

  PrefillArgs args = device.args();
  const std::vector<std::int64_t> shape{batch, tokens, heads, 128};
  args.out = TensorRef::contiguous(out.data(), ElementType::bf16, shape);
  const ElementType state_type = c.fp32_state ? ElementType::fp32 : ElementType::bf16;
  if (c.initial_state) {
    args.initial_state = TensorRef::contiguous(state.data(), state_type, {slots, heads, 128, 128});
    if (pool) {
      args.initial_state.strides = {pitch, k_state, 128, 1};
      args.ssm_state_indices = TensorRef::contiguous(indices.data(), ElementType::i32, {n_seq});
    }
  }
  if (!c.seq_order.empty()) {
    args.seq_order = TensorRef::contiguous(order.data(), ElementType::i32, {n_seq});
  }
  if (c.checkpoint_every > 0) {
    args.checkpoint_every_n_tokens = c.checkpoint_every;
    args.state_checkpoints = TensorRef::contiguous(checkpoints.data(), ElementType::bf16, {row_capacity, heads, 128, 128});
    args.checkpoint_cu_starts = TensorRef::contiguous(starts.data(), ElementType::i64, {n_seq + 1});
  }
  PrefillOptions call_options;
  call_options.schedule = c.schedule;
  call_options.target = c.target;
  call_options.prepare_overlap = c.prepare_overlap;
  // What the caller enqueues on the call's stream right after it must see
  // the finished results (every kernel of the call ordered before it); the
  // copies' buffers are allocated first, so no allocation sits between the
  // call and the copies
  DeviceArray out_copy(out.bytes());
  DeviceArray state_copy(state.bytes());
  const PrefillResult result = recurrent_kda_prefill(args, call_options);
  const CUstream stream = static_cast<CUstream>(args.stream);
  KDA_CU(cuMemcpyAsync, reinterpret_cast<CUdeviceptr>(out_copy.data()), reinterpret_cast<CUdeviceptr>(out.data()),
         out.bytes(), stream);
  KDA_CU(cuMemcpyAsync, reinterpret_cast<CUdeviceptr>(state_copy.data()),
         reinterpret_cast<CUdeviceptr>(state.data()), state.bytes(), stream);
  ContractReport report;
  report.schedule = result.schedule;
  report.target = result.target;
  report.checkpoint_rows = rows;
  report.prepare_overlapped = result.prepare_overlapped;
  report.prepare_overlap_reason = result.prepare_overlap_reason;

  const std::vector<Bf16> out_host = out.download_as<Bf16>(out_elems);
  const std::vector<std::uint8_t> state_after = state.download_as<std::uint8_t>(state_before.size());
  const std::vector<Bf16> rows_host =
      checkpoints.download_as<Bf16>(static_cast<std::size_t>(row_capacity * heads * k_state));
  const std::vector<Bf16> out_copied = out_copy.download_as<Bf16>(out_elems);
  CHECK(std::memcmp(out_copied.data(), out_host.data(), out_elems * sizeof(Bf16)) == 0);
  CHECK(state_copy.download_as<std::uint8_t>(state_before.size()) == state_after);
  report.hash = 0xcbf29ce484222325ULL;
  mix(report.hash, out_host.data(), out_host.size() * sizeof(Bf16));
  mix(report.hash, state_after.data(), state_after.size());
  mix(report.hash, rows_host.data(), rows_host.size() * sizeof(Bf16));

  // Output and final state per (sequence, head).
  std::int64_t elementwise_failures = 0;
  std::int64_t bad = 0;
  std::vector<bool> slot_used(static_cast<std::size_t>(slots), false);
  for (std::size_t n = 0; n < ranges.size(); ++n) {
    const reference::SequenceRange& r = ranges[n];
    const std::int64_t slot = slot_of[n];
    slot_used[static_cast<std::size_t>(slot)] = c.initial_state && r.length > 0;
    for (std::int64_t h = 0; h < heads; ++h) {
      RelativeRms acc;
      for (std::int64_t t = 0; t < r.length; ++t) {
        const bool elementwise = r.length <= 256 || t >= r.length - 16;
        for (std::int64_t d = 0; d < 128; ++d) {
          const std::size_t at = static_cast<std::size_t>(((r.token_begin + t) * heads + h) * 128 + d);
          const double x = bf16_to_float(out_host[at]);
          acc.add(x, ref.output[at]);
          if (elementwise && std::fabs(x - ref.output[at]) > 2e-2 + 2e-2 * std::fabs(ref.output[at])) {
            ++elementwise_failures;
          }
        }
      }
      bad += acc.non_finite;
      if (r.length > 0) {
        report.worst_output_rel_rms = std::max(report.worst_output_rel_rms, acc.rel());
      }
      if (!c.initial_state || r.length == 0) {
        continue; // nothing written (a zero-length sequence's slot is checked below)
      }
      RelativeRms sacc;
      const std::size_t base = static_cast<std::size_t>(slot * pitch + h * k_state);
      for (std::int64_t e = 0; e < k_state; ++e) {
        sacc.add(element(state_after, base + static_cast<std::size_t>(e), c.fp32_state),
                 ref.final_state[static_cast<std::size_t>((static_cast<std::int64_t>(n) * heads + h) * k_state + e)]);
      }
      bad += sacc.non_finite;
      report.worst_state_rel_rms = std::max(report.worst_state_rel_rms, sacc.rel());
    }
  }
  // Every byte the call must not write: slots no non-empty sequence names,
  // and the padding after every slot.
  std::int64_t changed_bytes = 0;
  for (std::int64_t s = 0; s < slots; ++s) {
    const std::size_t begin = static_cast<std::size_t>(s * pitch) * esize;
    const std::size_t data_end = begin + static_cast<std::size_t>(slot_elems) * esize;
    const std::size_t end = begin + static_cast<std::size_t>(pitch) * esize;
    for (std::size_t i = slot_used[static_cast<std::size_t>(s)] ? data_end : begin; i < end; ++i) {
      changed_bytes += state_after[i] != state_before[i] ? 1 : 0;
    }
  }
  // Checkpoint rows: each within the final-state tolerance; spare rows poisoned.
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t h = 0; h < heads; ++h) {
      RelativeRms cacc;
      const std::size_t base = static_cast<std::size_t>((row * heads + h) * k_state);
      for (std::int64_t e = 0; e < k_state; ++e) {
        cacc.add(bf16_to_float(rows_host[base + static_cast<std::size_t>(e)]), ref.checkpoints[base + static_cast<std::size_t>(e)]);
      }
      bad += cacc.non_finite;
      report.worst_checkpoint_rel_rms = std::max(report.worst_checkpoint_rel_rms, cacc.rel());
    }
  }
  std::int64_t spare_written = 0;
  for (std::size_t i = static_cast<std::size_t>(rows * heads * k_state); i < rows_host.size(); ++i) {
    spare_written += rows_host[i].bits != 0xffff ? 1 : 0;
  }
  CHECK(bad == 0);
  CHECK(elementwise_failures == 0);
  CHECK(changed_bytes == 0);
  CHECK(spare_written == 0);
  CHECK(report.worst_output_rel_rms <= 1e-2);
  CHECK(report.worst_state_rel_rms <= 1e-2);
  CHECK(report.worst_checkpoint_rel_rms <= 1e-2);
  return report;
}

} // namespace kda::test
