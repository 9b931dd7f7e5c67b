#include "gpu_prefill_case.hpp"

#include "device_array.hpp"
#include "device_inputs.hpp"
#include "device_values.hpp"
#include "reference/sequences.hpp"
#include "reference/token_reference.hpp"
#include "kdajit/kda.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

namespace kda::test {
namespace {

using reference::OwnedState;
using reference::StateDtype;

std::vector<double> state_values(const std::vector<std::uint8_t>& bytes, bool fp32) {
  std::vector<double> out(bytes.size() / (fp32 ? 4 : 2));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = element(bytes, i, fp32);
  }
  return out;
}

} // namespace

GpuCaseReport run_gpu_case(const GpuCase& c, const std::optional<std::string>& schedule) {
  INFO("case " << c.label);
  reference::testing::RandomProblem problem(c.spec, c.seed);
  reference::PrefillInputs inputs = c.int32_offsets ? problem.inputs_int32() : problem.inputs();
  const std::int64_t n_seq = problem.sequences();
  const std::int64_t heads = c.spec.heads;
  const std::int64_t batch = c.spec.batch;
  const std::int64_t tokens = c.spec.tokens;
  const bool inplace = c.state == GpuStateMode::inplace_bf16 || c.state == GpuStateMode::inplace_fp32;
  const bool fp32_state = c.state == GpuStateMode::inplace_fp32 || c.state == GpuStateMode::final_fp32_caller;
  const StateDtype dtype = fp32_state ? StateDtype::fp32 : StateDtype::bf16;

  // Reference (fp64), on a copy of the initial state.
  std::mt19937_64 rng(c.seed * 7919 + 17);
  OwnedState initial = reference::testing::random_state(dtype, n_seq, heads, rng);
  OwnedState reference_state = initial;
  reference::PrefillOptions options;
  options.lower_bound = -5.0;
  options.output_final_state = !inplace && c.state != GpuStateMode::none;
  if (inplace) {
    inputs.initial_state = reference_state.view(n_seq);
  }
  const reference::PrefillResult ref = reference::run_reference_prefill(inputs, options);
  const std::vector<reference::SequenceRange> ranges = reference::sequence_ranges(inputs);

  // Device.
  const DeviceInputs device(problem);
  const std::size_t state_bytes = static_cast<std::size_t>(n_seq * heads * 128 * 128) * (fp32_state ? 4 : 2);
  DeviceArray state(state_bytes);
  if (inplace) {
    state.upload(fp32_state ? static_cast<const void*>(initial.fp32.data()) : initial.bf16.data(), state_bytes);
  } else {
    state.poison();
  }
  const std::size_t out_elems = static_cast<std::size_t>(batch * tokens * heads * 128);
  DeviceArray out(out_elems * 2);
  out.poison();

  PrefillArgs args = device.args(c.int32_offsets);
  const std::vector<std::int64_t> shape{batch, tokens, heads, 128};
  args.out = TensorRef::contiguous(out.data(), ElementType::bf16, shape);
  const ElementType state_type = fp32_state ? ElementType::fp32 : ElementType::bf16;
  if (inplace) {
    args.initial_state = TensorRef::contiguous(state.data(), state_type, {n_seq, heads, 128, 128});
  }
  args.output_final_state = c.state == GpuStateMode::final_bf16 || c.state == GpuStateMode::final_fp32_caller;
  if (c.state == GpuStateMode::final_fp32_caller) {
    args.final_state = TensorRef::contiguous(state.data(), state_type, {n_seq, heads, 128, 128});
  }
  PrefillOptions call_options;
  call_options.schedule = schedule;
  call_options.prepare_overlap = c.prepare_overlap;
  call_options.target = c.target;
  PrefillResult result = recurrent_kda_prefill(args, call_options);
  GpuCaseReport report;
  report.schedule = result.schedule;
  report.target = result.target;
  report.prepare_overlapped = result.prepare_overlapped;

  const std::vector<Bf16> out_host = out.download_as<Bf16>(out_elems);
  std::vector<std::uint8_t> state_bytes_host(state_bytes);
  const bool state_written = c.state != GpuStateMode::none;
  if (c.state == GpuStateMode::final_bf16) {
    REQUIRE(result.owned_final_state);
    KDA_CU(cuCtxSynchronize);
    KDA_CU(cuMemcpyDtoH, state_bytes_host.data(), reinterpret_cast<CUdeviceptr>(result.final_state), state_bytes);
  } else {
    state.download(state_bytes_host.data(), state_bytes);
  }
  const std::vector<double> gpu_state = state_values(state_bytes_host, fp32_state);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  auto mix = [&hash](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (std::size_t i = 0; i < bytes; ++i) {
      hash = (hash ^ p[i]) * 0x100000001b3ULL;
    }
  };
  mix(out_host.data(), out_host.size() * sizeof(Bf16));
  mix(state_bytes_host.data(), state_bytes_host.size());
  report.output_hash = hash;

  RelativeRms whole_out;
  RelativeRms whole_state;
  for (std::size_t n = 0; n < ranges.size(); ++n) {
    const reference::SequenceRange& r = ranges[n];
    for (std::int64_t h = 0; h < heads; ++h) {
      RelativeRms acc;
      for (std::int64_t t = 0; t < r.length; ++t) {
        const bool elementwise = r.length <= 256 || t >= r.length - 16;
        for (std::int64_t d = 0; d < 128; ++d) {
          const std::size_t at = static_cast<std::size_t>(((r.token_begin + t) * heads + h) * 128 + d);
          const double x = bf16_to_float(out_host[at]);
          const double want = ref.output[at];
          if (std::isnan(x) || std::isinf(x)) {
            ++report.nan_count;
            continue;
          }
          acc.add(x, want);
          whole_out.add(x, want);
          if (elementwise && std::fabs(x - want) > 2e-2 + 2e-2 * std::fabs(want)) {
            ++report.elementwise_failures;
          }
        }
      }
      if (r.length > 0) {
        report.worst_output_rel_rms = std::max(report.worst_output_rel_rms, acc.rel());
      }
      if (!state_written) {
        continue;
      }
      RelativeRms sacc;
      for (std::int64_t e = 0; e < 128 * 128; ++e) {
        const std::size_t at = static_cast<std::size_t>((static_cast<std::int64_t>(n) * heads + h) * 128 * 128 + e);
        const double x = gpu_state[at];
        if (std::isnan(x) || std::isinf(x)) {
          ++report.nan_count;
          continue;
        }
        sacc.add(x, ref.final_state[at]);
        whole_state.add(x, ref.final_state[at]);
        if (r.length == 0 && inplace && x != initial.load(at)) {
          ++report.empty_state_changes;
        }
      }
      report.worst_state_rel_rms = std::max(report.worst_state_rel_rms, sacc.rel());
    }
  }
  report.whole_output_rel_rms = whole_out.rel();
  report.whole_state_rel_rms = whole_state.rel();
  CHECK(report.nan_count == 0);
  CHECK(report.elementwise_failures == 0);
  CHECK(report.empty_state_changes == 0);
  CHECK(report.worst_output_rel_rms <= 1e-2);
  CHECK(report.worst_state_rel_rms <= 1e-2);
  return report;
}

reference::testing::ProblemSpec fixed(std::int64_t batch, std::int64_t tokens, std::int64_t heads,
                                      reference::testing::GateDistribution gate) {
  reference::testing::ProblemSpec s;
  s.batch = batch;
  s.tokens = tokens;
  s.heads = heads;
  s.gate = gate;
  return s;
}

reference::testing::ProblemSpec packed(std::vector<std::int64_t> lengths, std::int64_t heads) {
  reference::testing::ProblemSpec s;
  s.heads = heads;
  s.seqlens = std::move(lengths);
  for (std::int64_t l : s.seqlens) {
    s.tokens += l;
  }
  return s;
}

} // namespace kda::test
