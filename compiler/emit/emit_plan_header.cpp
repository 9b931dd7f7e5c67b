#include "compiler/emit/emit_cuda.hpp"

#include "compiler/encodings/smem_descriptor.hpp"

#include <fmt/format.h>

namespace kda {
namespace {

void constant(SourceWriter& out, const std::string& name, std::int64_t value) {
  out.line(fmt::format("constexpr int {} = {};", name, value));
}

void emit_params(const ArgAbi& abi, SourceWriter& out) {
  out.open("struct KdaParams");
  for (const ArgField& f : abi.fields) {
    out.line(fmt::format("{} {};", f.c_type, f.name));
  }
  out.close(";");
  // NVRTC has no offsetof; the fields are declared in offset order with
  // natural alignment, so the size check pins the layout the launcher packs.
  out.line(fmt::format("static_assert(sizeof(KdaParams) == {}, \"argument ABI v{}\");", abi.size, abi.version));
  out.line(fmt::format("static_assert(alignof(KdaParams) == {}, \"argument ABI v{}\");", abi.alignment, abi.version));
}

void emit_entry_constants(const EntryPlan& e, SourceWriter& out) {
  out.open("namespace " + e.plan_namespace);
  constant(out, "THREADS", e.launch.threads);
  constant(out, "STAGES", e.pipeline.stages);
  constant(out, "PRODUCER_GROUPS", e.pipeline.producer_groups);
  constant(out, "STAGE_BYTES", e.stage_bytes);
  constant(out, "SMEM_BYTES", e.launch.dynamic_smem);
  constant(out, "CHUNKS_PER_CTA", e.launch.chunks_per_cta);
  for (const WarpRolePlan& r : e.roles) {
    constant(out, r.name + "_WARPS", r.warps);
    constant(out, r.name + "_FIRST_WARP", r.first_warp);
    constant(out, r.name + "_REGISTERS", r.registers); // setmaxnreg target, 0: none
  }
  for (const SmemSymbol& s : e.smem) {
    constant(out, s.name + "_OFFSET", s.offset);
    constant(out, s.name + "_BYTES", s.bytes);
    constant(out, s.name + "_PITCH", s.pitch);
    constant(out, s.name + "_STAGED", s.region == Region::stage ? 1 : 0); // one copy per ring slot
  }
  for (const SmemSymbol& s : e.smem) {
    if (s.region == Region::stage) {
      out.line(fmt::format("static_assert({0}_OFFSET + {0}_BYTES <= STAGE_BYTES, \"{1} inside its ring slot\");", s.name,
                           s.buffer));
    } else {
      out.line(fmt::format("static_assert({0}_OFFSET + {0}_BYTES <= SMEM_BYTES, \"{1} inside the SMEM plan\");", s.name,
                           s.buffer));
    }
    out.line(fmt::format("static_assert({}_OFFSET % 16 == 0, \"{} is 16-byte aligned\");", s.name, s.buffer));
  }
  out.line("static_assert(STAGES * STAGE_BYTES <= SMEM_BYTES || STAGE_BYTES == 0, \"ring inside the SMEM plan\");");
  out.close(fmt::format(" // namespace {}", e.plan_namespace));
}

} // namespace

void emit_plan_header(const KernelPlan& plan, SourceWriter& out) {
  out.open("namespace kda_plan");
  out.line(fmt::format("// schedule {} on {}, shape {}", plan.schedule_name, plan.target.name, plan.shape.canonical()));
  constant(out, "CHUNK_SIZE", plan.tiles.chunk_size);
  constant(out, "HEAD_DIM", plan.tiles.head_dim);
  constant(out, "M_TILE", plan.tiles.m_tile);
  constant(out, "STATE_FP32", plan.shape.state_dtype == StatePrecision::fp32 ? 1 : 0);
  constant(out, "LAYOUT_PACKED", plan.shape.layout == LayoutKind::packed ? 1 : 0);
  constant(out, "WS_RECORD_BYTES", plan.workspace.record_bytes);
  for (const WorkspaceField& f : plan.workspace.fields) {
    constant(out, "WS_" + f.name + "_OFFSET", f.offset);
    if (f.core_lbo > 0) {
      // K-major core matrices without swizzle; the descriptor's address
      // field is added on the device.
      SmemDescriptorFields d;
      d.leading_byte_offset = static_cast<std::uint32_t>(f.core_lbo);
      d.stride_byte_offset = static_cast<std::uint32_t>(f.core_sbo);
      constant(out, "WS_" + f.name + "_LBO", f.core_lbo);
      constant(out, "WS_" + f.name + "_SBO", f.core_sbo);
      out.line(fmt::format("constexpr unsigned long long WS_{}_DESC = {:#x}ull;", f.name, encode_wgmma_descriptor(d)));
    }
  }
  out.blank();
  emit_params(plan.abi, out);
  for (const EntryPlan& e : plan.entries) {
    out.blank();
    emit_entry_constants(e, out);
  }
  out.close(" // namespace kda_plan");
}

} // namespace kda
