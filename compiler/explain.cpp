#include "compiler/explain.hpp"

#include "compiler/plan_smem.hpp"
#include "compiler/schedule_checks.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

namespace kda {
namespace {

using nlohmann::json;

std::string shape_text(const BufferDecl& b) {
  std::string dims;
  for (std::int64_t d : b.shape) {
    if (!dims.empty()) {
      dims += 'x';
    }
    dims += std::to_string(d);
  }
  return fmt::format("{}[{}]", to_string(b.dtype), dims);
}

json buffer_json(const KernelDecl& kernel, const BufferDecl& decl, const PlacedBuffer& p) {
  json j = {{"name", p.name},
            {"region", to_string(p.region)},
            {"offset", p.offset},
            {"bytes", p.bytes},
            {"end", p.end()},
            {"alignment", p.alignment},
            {"dtype", to_string(decl.dtype)},
            {"shape", decl.shape},
            {"lifetime", {phase_name(kernel, p.first_phase), phase_name(kernel, p.last_phase)}},
            {"pinned", p.pinned}};
  j["alias"] = p.alias ? json(*p.alias) : json(nullptr);
  j["only_with"] = decl.only_with ? json(*decl.only_with) : json(nullptr);
  if (!decl.purpose.empty()) {
    j["purpose"] = decl.purpose;
  }
  return j;
}

// The total SMEM of a plan without checkpoints, where the kernel declares
// buffers only plans with checkpoints place (validation plans the largest
// layout, with them); none otherwise.
std::optional<std::int64_t> total_without_checkpoints(const ValidatedKernel& k) {
  for (const BufferDecl& b : k.decl.smem.buffers) {
    if (b.only_with) {
      return plan_smem(k.decl, false).total_bytes;
    }
  }
  return std::nullopt;
}

json kernel_json(const ValidatedKernel& k, const Target& target) {
  const SmemLayout& s = k.smem;
  const std::optional<std::int64_t> plain = total_without_checkpoints(k);
  json buffers = json::array();
  for (std::size_t i = 0; i < s.buffers.size(); ++i) {
    buffers.push_back(buffer_json(k.decl, k.decl.smem.buffers[i], s.buffers[i]));
  }
  json roles = json::array();
  for (const WarpRole& r : k.decl.warp_roles) {
    json role = {{"name", r.name}, {"warps", r.warps}};
    if (r.registers) {
      role["registers"] = *r.registers;
    }
    roles.push_back(role);
  }
  return {{"name", k.decl.name},
          {"role", to_string(k.decl.role)},
          {"phases", k.decl.phases},
          {"threads", k.decl.threads()},
          {"warp_roles", roles},
          {"pipeline", {{"stages", k.decl.pipeline.stages}, {"producer_groups", k.decl.pipeline.producer_groups}}},
          {"smem",
           {{"buffers", buffers},
            {"stage_used_bytes", s.stage_used_bytes},
            {"stage_bytes", s.stage_bytes},
            {"stages", s.stages},
            {"ring_bytes", s.ring_bytes},
            {"shared_offset", s.shared_offset},
            {"shared_bytes", s.shared_bytes},
            {"base_alignment", s.base_alignment},
            {"alignment_slack", s.alignment_slack},
            {"total_bytes", s.total_bytes},
            {"total_bytes_without_checkpoints", plain ? json(*plain) : json(nullptr)},
            {"limit_bytes", target.max_smem_per_block},
            {"headroom_bytes", target.max_smem_per_block - s.total_bytes}}}};
}

std::string lifetime_text(const KernelDecl& kernel, const PlacedBuffer& p) {
  return fmt::format("[{}, {})", phase_name(kernel, p.first_phase), phase_name(kernel, p.last_phase));
}

void append_region(std::string& out, const ValidatedKernel& k, Region region) {
  const SmemLayout& s = k.smem;
  out += fmt::format("  {:<14} {:>7} {:>7} {:>7}  {:<16} {:<24} {:<12} {}\n", "buffer", "offset", "end", "bytes",
                     "type", "lifetime", "alias", "purpose");
  for (std::size_t i = 0; i < s.buffers.size(); ++i) {
    const PlacedBuffer& p = s.buffers[i];
    if (p.region != region) {
      continue;
    }
    const BufferDecl& d = k.decl.smem.buffers[i];
    out += fmt::format("  {:<14} {:>7} {:>7} {:>7}  {:<16} {:<24} {:<12} {}\n", p.name, p.offset, p.end() - 1,
                       with_thousands(p.bytes), shape_text(d), lifetime_text(k.decl, p),
                       p.alias ? *p.alias : std::string("-"),
                       d.only_with ? fmt::format("(only with {}) {}", *d.only_with, d.purpose) : d.purpose);
  }
}

} // namespace

json explain_json(const ValidatedSchedule& v) {
  const Schedule& s = v.schedule();
  json kernels = json::array();
  for (const ValidatedKernel& k : v.kernels()) {
    kernels.push_back(kernel_json(k, v.target()));
  }
  return {{"schedule", s.name},
          {"source", s.source},
          {"target", v.target().name},
          {"valid", true},
          {"family", to_string(s.family)},
          {"chunk_size", s.chunk_size},
          {"exponent_anchor", to_string(s.exponent_anchor)},
          {"m_tile", s.m_tile},
          {"decomposition", to_string(s.decomposition)},
          {"grid", to_string(s.grid)},
          {"state", {{"precision", to_string(s.state.precision)}, {"residence", to_string(s.state.residence)}}},
          {"tmem", {{"used_columns", v.tmem().used_columns}, {"allocated_columns", v.tmem().allocated_columns}}},
          {"lower_bound", {{"min", s.eligibility.lower_bound.min},
                           {"max", s.eligibility.lower_bound.max},
                           {"safe_magnitude_below", v.safe_lower_bound_magnitude()}}},
          {"kernels", kernels}};
}

std::string explain_text(const ValidatedSchedule& v) {
  const Schedule& s = v.schedule();
  const Target& t = v.target();
  std::string out = fmt::format("schedule {} ({}) on {}\n", s.name, s.source, t.name);
  out += fmt::format("  family {}, chunk {}, anchor {}, m_tile {}, {} {}, state {} in {}\n", to_string(s.family),
                     s.chunk_size, to_string(s.exponent_anchor), s.m_tile, to_string(s.decomposition),
                     to_string(s.grid), to_string(s.state.precision), to_string(s.state.residence));
  out += fmt::format("  lower_bound range [{}, {}); safe for |lower_bound| < {:.4f}\n", s.eligibility.lower_bound.min,
                     s.eligibility.lower_bound.max, v.safe_lower_bound_magnitude());
  for (const ValidatedKernel& k : v.kernels()) {
    const SmemLayout& m = k.smem;
    out += fmt::format("\nkernel {} ({}): {} threads, {} stage{}, {} producer group{}\n", k.decl.name,
                       to_string(k.decl.role), k.decl.threads(), m.stages, m.stages == 1 ? "" : "s",
                       k.decl.pipeline.producer_groups, k.decl.pipeline.producer_groups == 1 ? "" : "s");
    std::string phases;
    for (const std::string& p : k.decl.phases) {
      phases += phases.empty() ? "" : " > ";
      phases += p;
    }
    out += fmt::format("  phases: {}\n", phases);
    out += fmt::format("\n  stage region (one ring slot; offsets inside the slot):\n");
    append_region(out, k, Region::stage);
    out += fmt::format("\n  shared region (one per CTA; offsets inside the region, which starts at byte {}):\n",
                       m.shared_offset);
    append_region(out, k, Region::shared);
    out += fmt::format("\n  stage bytes      {:>9} B (used {} B, aligned to {} B)\n", with_thousands(m.stage_bytes),
                       with_thousands(m.stage_used_bytes), m.stage_alignment);
    out += fmt::format("  ring             {:>9} B ({} x {} B)\n", with_thousands(m.ring_bytes), m.stages,
                       with_thousands(m.stage_bytes));
    out += fmt::format("  shared region    {:>9} B\n", with_thousands(m.shared_bytes));
    out += fmt::format("  base alignment   {:>9} B (align the 16-byte dynamic SMEM base to {} B)\n",
                       with_thousands(m.alignment_slack), m.base_alignment);
    out += fmt::format("  total            {:>9} B of {} B on {} ({} B headroom)\n", with_thousands(m.total_bytes),
                       with_thousands(t.max_smem_per_block), t.name,
                       with_thousands(t.max_smem_per_block - m.total_bytes));
    if (const std::optional<std::int64_t> plain = total_without_checkpoints(k)) {
      out += fmt::format("  no checkpoints   {:>9} B (plans without checkpoints leave out the buffers only with "
                         "them)\n",
                         with_thousands(*plain));
    }
  }
  if (v.tmem().used_columns > 0) {
    out += fmt::format("\nTMEM: {} columns used, {} allocated (next power of two >= 32) of {}\n",
                       v.tmem().used_columns, v.tmem().allocated_columns, t.tmem_columns);
  } else {
    out += "\nTMEM: none\n";
  }
  return out;
}

std::string summary_line(const ValidatedSchedule& v) {
  std::string smem;
  for (const ValidatedKernel& k : v.kernels()) {
    smem += smem.empty() ? "" : ", ";
    if (v.kernels().size() > 1) {
      smem += k.decl.name + " ";
    }
    smem += with_thousands(k.smem.total_bytes) + " B";
  }
  std::string tmem = v.tmem().used_columns > 0
                         ? fmt::format(", TMEM {} columns (allocates {})", v.tmem().used_columns,
                                       v.tmem().allocated_columns)
                         : "";
  return fmt::format("{} on {}: valid, SMEM {} of {} B{}", v.schedule().name, v.target().name, smem,
                     with_thousands(v.target().max_smem_per_block), tmem);
}

} // namespace kda
