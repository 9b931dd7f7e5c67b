#include "runtime/prepare_overlap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kda {
namespace {

constexpr std::int64_t k_max_grid_yz = 65535; // gridDim.y and gridDim.z limits

OverlapDecision refuse(std::string reason) {
  OverlapDecision d;
  d.reason = std::move(reason);
  return d;
}

} // namespace

std::int64_t block_registers(const KernelFootprint& kernel) {
  const std::int64_t warps = (kernel.threads + 31) / 32;
  const std::int64_t per_warp = (static_cast<std::int64_t>(kernel.registers_per_thread) * 32 + 255) / 256 * 256;
  return warps * per_warp;
}

bool prepare_fits_beside_recurrence(const OverlapRequest& r) {
  const std::int64_t smem = r.prepare.smem_bytes + r.recurrence.smem_bytes + 2 * r.sm.reserved_smem_per_block;
  if (smem > r.sm.smem_bytes || r.prepare.threads + r.recurrence.threads > r.sm.threads) {
    return false;
  }
  // The register file is split between an SM's four schedulers, and a block's
  // warps are spread over them: take the worst case, the most warps of each
  // block on one quadrant (9 recurrence warps at 168 registers leave a
  // quadrant 256 registers: an 8-warp prepare CTA then fits nowhere).
  auto quadrant_registers = [](const KernelFootprint& k) {
    const std::int64_t warps = (k.threads + 31) / 32;
    return (warps + 3) / 4 * block_registers({32, k.registers_per_thread, 0});
  };
  return quadrant_registers(r.prepare) + quadrant_registers(r.recurrence) <= r.sm.registers / 4;
}

std::int64_t modelled_lead_chunks(const PrepareOverlapModel& model, const OverlapRequest& r) {
  // Prepare rate beside the recurrence (chunks per us over the GPU): full-rate
  // SMs without a recurrence CTA, `share` of it on the others when a prepare
  // CTA fits beside a recurrence CTA.
  const double sms_free = static_cast<double>(r.sm_count - r.recurrence_ctas);
  const double share = prepare_fits_beside_recurrence(r) ? model.beside_recurrence_share : 0.0;
  const double rate =
      model.prepare_chunks_per_us_per_sm * (sms_free + share * static_cast<double>(r.recurrence_ctas));
  // The rest (n - lead chunks of every pair) must be ready by the time the
  // recurrence (n x t) reaches it: pairs (n - lead) / rate <= n t.
  const double n = static_cast<double>(r.chunks_per_sequence);
  const double lead = n * (1.0 - model.recurrence_us_per_chunk * rate / static_cast<double>(r.pairs));
  return static_cast<std::int64_t>(std::ceil(std::max(lead, 0.0)));
}

std::int64_t prepare_ctas_per_sm(const OverlapRequest& r) {
  const std::int64_t smem = r.prepare.smem_bytes + r.sm.reserved_smem_per_block;
  const std::int64_t registers = block_registers(r.prepare);
  if (smem <= 0 || r.prepare.threads <= 0 || registers <= 0) {
    return 0;
  }
  return std::min({r.sm.smem_bytes / smem, r.sm.threads / r.prepare.threads, r.sm.registers / registers});
}

int modelled_streams(const PrepareOverlapModel& model, int sm_count) {
  const double t_rho = model.recurrence_us_per_chunk * model.prepare_chunks_per_us_per_sm;
  const auto streams = static_cast<int>(std::lround(static_cast<double>(sm_count) * t_rho / (1.0 + t_rho)));
  return std::clamp(streams, 1, std::max(sm_count - 1, 1));
}

namespace {

OverlapDecision decide_prepare_split(const PrepareOverlapModel& model, const OverlapRequest& r) {
  if (r.sm_count < 2) {
    return refuse("off: the split needs an SM for the recurrence and one for the prepare kernel");
  }
  if (r.recurrence.smem_bytes + r.sm.reserved_smem_per_block <= r.sm.smem_bytes / 2) {
    return refuse("off: two recurrence CTAs fit on one SM, so one recurrence CTA per SM is not guaranteed");
  }
  if (r.chunks_per_sequence < 1) {
    return refuse("off: no chunks to prepare");
  }
  const std::int64_t walked = r.chunks_per_sequence * r.pairs;
  const double saving_us = static_cast<double>(walked) /
                          (model.prepare_chunks_per_us_per_sm * static_cast<double>(r.sm_count));
  if (saving_us < model.min_saving_us) {
    return refuse(fmt::format("off: it would take {:.1f} us of prepare off the critical path, less than the {:.0f} us "
                              "its second stream costs",
                              saving_us, model.min_saving_us));
  }
  const int model_streams = modelled_streams(model, r.sm_count);
  const int streams = static_cast<int>(std::clamp<std::int64_t>(
      std::min<std::int64_t>(r.streams.value_or(model_streams), r.recurrence_ctas), 1, r.sm_count - 1));
  const std::int64_t per_sm = prepare_ctas_per_sm(r);
  const std::int64_t per_stream = per_sm * (r.sm_count - streams) / streams;
  if (per_stream < 1) {
    return refuse(fmt::format("off: the {} SMs left beside {} recurrence CTAs hold {} prepare CTAs, fewer than one "
                              "per recurrence CTA",
                              r.sm_count - streams, streams, per_sm * (r.sm_count - streams)));
  }
  OverlapDecision d;
  d.overlap = true;
  d.streams = streams;
  d.prepare_ctas = static_cast<std::int64_t>(streams) * per_stream;
  d.reason = fmt::format("on: split, the recurrence on {} of {} SMs{}, {} prepare CTAs ({} per recurrence CTA) walking "
                         "its items beside it",
                         streams, r.sm_count, r.streams ? " (KDAJIT_PREPARE_STREAMS)" : "", d.prepare_ctas,
                         per_stream);
  return d;
}

} // namespace

OverlapDecision decide_prepare_overlap(const PrepareOverlapModel& model, const OverlapRequest& r) {
  if (!r.allowed) {
    return refuse("off (PrefillOptions::prepare_overlap = false)");
  }
  if (r.persistent) {
    return decide_prepare_split(model, r);
  }
  if (r.recurrence_ctas >= r.sm_count) {
    return refuse(fmt::format("off: {} recurrence CTAs leave none of the {} SMs to the prepare kernel they wait for",
                              r.recurrence_ctas, r.sm_count));
  }
  if (r.recurrence.smem_bytes + r.sm.reserved_smem_per_block <= r.sm.smem_bytes / 2) {
    return refuse("off: two recurrence CTAs fit on one SM, so one recurrence CTA per SM is not guaranteed");
  }
  if (r.sequences > k_max_grid_yz || r.chunk_grid_extent > k_max_grid_yz) {
    return refuse(fmt::format("off: the chunk-major prepare grid ({} sequences x {} chunks) exceeds 65,535 blocks in "
                              "y or z",
                              r.sequences, r.chunk_grid_extent));
  }
  const std::int64_t lead = std::max<std::int64_t>(model.min_lead_chunks, modelled_lead_chunks(model, r));
  if (lead >= r.chunk_grid_extent) {
    return refuse(fmt::format("off: the model's lead ({} chunks) covers every chunk ({})", lead,
                              r.chunk_grid_extent));
  }
  const double saving_us = static_cast<double>((r.chunk_grid_extent - lead) * r.pairs) /
                          (model.prepare_chunks_per_us_per_sm * static_cast<double>(r.sm_count));
  if (saving_us < model.min_saving_us) {
    return refuse(fmt::format("off: it would take {:.1f} us of prepare off the critical path, less than the {:.0f} us "
                              "its second stream costs",
                              saving_us, model.min_saving_us));
  }
  OverlapDecision d;
  d.overlap = true;
  d.lead_chunks = lead;
  d.chunk_extent = r.chunk_grid_extent;
  d.reason = fmt::format("on: {} of {} chunks per pair prepared first, the rest beside the recurrence", lead,
                         r.chunk_grid_extent);
  return d;
}

} // namespace kda
