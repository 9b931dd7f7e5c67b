#include "compiler/emit/emit_cuda.hpp"

#include "compiler/encodings/smem_descriptor.hpp"
#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

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

// One region's buffers in offset order as a chain of structs, each adding the
// next group of buffers that share an offset (aliases: one anonymous union)
// after explicit padding: `<name>_<k> : <name>_<k-1>`. A buffer that starts
// inside the group (an alias of part of a larger buffer) joins its union as
// `struct <link>_<buffer> { u8 pad[inner offset]; T <buffer>[n]; } <buffer>_at`.
// NVRTC has no offsetof, so each link asserts that sizeof of the chain before
// it (what the compiler lays out from the buffers' element types and counts)
// plus the padding (and the inner padding) is the planned offset of every
// buffer in the group. `first` is the chain's first
// base (empty: none); returns the last link's name, or `first` when the
// region is empty; `end` receives the last member's end.
std::string emit_region_chain(const std::string& name, const std::string& first, std::int64_t start,
                              const std::vector<const SmemSymbol*>& symbols, SourceWriter& out, std::int64_t& end) {
  std::string base = first;
  std::int64_t at = start;
  std::size_t i = 0;
  int link = 0;
  while (i < symbols.size()) {
    const std::int64_t offset = symbols[i]->offset;
    if (offset < at) {
      throw InternalError(fmt::format("SMEM buffer '{}' at {} overlaps the buffer before it (ends at {}) without "
                                      "sharing its offset",
                                      symbols[i]->buffer, offset, at));
    }
    const std::string this_link = fmt::format("{}_{}", name, link++);
    // the group: buffers at this offset, then those starting inside it
    std::int64_t bytes = 0;
    std::vector<const SmemSymbol*> group;
    std::vector<const SmemSymbol*> nested;
    for (; i < symbols.size() && (symbols[i]->offset == offset || symbols[i]->offset < offset + bytes); ++i) {
      (symbols[i]->offset == offset ? group : nested).push_back(symbols[i]);
      bytes = std::max(bytes, symbols[i]->offset - offset + symbols[i]->bytes);
    }
    for (const SmemSymbol* s : nested) { // an anonymous union may not declare types
      out.line(fmt::format("struct {}_{} {{ ::kda::u8 pad[{}]; {} {}[{}]; }};", this_link, s->buffer, s->offset - offset,
                           s->c_type, s->buffer, s->elements));
    }
    out.open(base.empty() ? fmt::format("struct {}", this_link) : fmt::format("struct {} : {}", this_link, base));
    if (offset > at) {
      out.line(fmt::format("::kda::u8 pad[{}];", offset - at));
    }
    out.open("union");
    for (const SmemSymbol* s : group) {
      out.line(fmt::format("{} {}[{}];", s->c_type, s->buffer, s->elements));
    }
    for (const SmemSymbol* s : nested) {
      out.line(fmt::format("{}_{} {}_at;", this_link, s->buffer, s->buffer));
    }
    out.close(";");
    out.close(";");
    std::string where = base.empty() ? std::string() : fmt::format("sizeof({})", base);
    if (offset > at || where.empty()) {
      where += fmt::format("{}{}", where.empty() ? "" : " + ", offset - at);
    }
    for (const SmemSymbol* g : group) {
      out.line(fmt::format("static_assert({} == {}_OFFSET, \"{} at its planned offset\");", where, g->name, g->buffer));
    }
    for (const SmemSymbol* g : nested) {
      out.line(fmt::format("static_assert({} + sizeof({}_{}::pad) == {}_OFFSET, \"{} at its planned offset\");", where,
                           this_link, g->buffer, g->name, g->buffer));
    }
    base = this_link;
    at = offset + bytes;
  }
  end = at;
  return base;
}

// The SMEM plan as C++ layouts (a ring slot, then the whole dynamic SMEM),
// checked against the planner's offsets and sizes by static_asserts.
void emit_smem_layout(const EntryPlan& e, SourceWriter& out) {
  std::vector<const SmemSymbol*> stage;
  std::vector<const SmemSymbol*> shared;
  for (const SmemSymbol& s : e.smem) {
    if (s.present) {
      (s.region == Region::stage ? stage : shared).push_back(&s);
    }
  }
  if (stage.empty() && shared.empty()) {
    return;
  }
  auto by_offset = [](const SmemSymbol* a, const SmemSymbol* b) { return a->offset < b->offset; };
  std::stable_sort(stage.begin(), stage.end(), by_offset);
  std::stable_sort(shared.begin(), shared.end(), by_offset);
  out.line("// The SMEM plan as C++ layouts: buffers that reuse each other's bytes share a union.");
  std::string ring;
  std::int64_t at = 0;
  if (!stage.empty()) {
    std::int64_t end = 0;
    const std::string last = emit_region_chain("StageSlotUpTo", "", 0, stage, out, end);
    out.open(fmt::format("struct StageSlot : {}", last));
    if (e.stage_bytes > end) {
      out.line(fmt::format("::kda::u8 tail[{}];", e.stage_bytes - end));
    }
    out.close(";");
    out.line("static_assert(sizeof(StageSlot) == STAGE_BYTES, \"the ring slot's layout has the planned size\");");
    out.open("struct Ring");
    out.line("StageSlot slot[STAGES];");
    out.close(";");
    ring = "Ring";
    at = e.pipeline.stages * e.stage_bytes;
  }
  std::int64_t end = at;
  const std::string last = emit_region_chain("SmemUpTo", ring, at, shared, out, end);
  out.open(fmt::format("struct SmemLayout : {}", last));
  out.close(";");
  out.line("static_assert(sizeof(SmemLayout) <= SMEM_BYTES, \"the layout fits the dynamic SMEM requested\");");
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
    if (!s.present) {
      continue; // only_with a feature the plan lacks: its constants are 0
    }
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
  emit_smem_layout(e, out);
  out.close(fmt::format(" // namespace {}", e.plan_namespace));
}

// tcgen05: instruction descriptors, SMEM operand layouts with their
// descriptors' constant fields, the TMEM column map (PTX ISA "Instruction
// descriptor", "Shared Memory Descriptor", "Tensor Memory"; encoded by
// compiler/encodings/).
void emit_umma_constants(const UmmaPlan& u, SourceWriter& out) {
  constant(out, "UMMA_CORE_LBO", u.core_lbo);
  for (const UmmaOperand& o : u.operands) {
    constant(out, fmt::format("UMMA_{}_LBO", o.name), o.lbo);
    constant(out, fmt::format("UMMA_{}_SBO", o.name), o.sbo);
    constant(out, fmt::format("UMMA_{}_SWIZZLE128", o.name), o.swizzle128 ? 1 : 0);
    out.line(fmt::format("constexpr unsigned long long UMMA_DESC_{} = {:#x}ull; // LBO {}, SBO {}, {}", o.name, o.desc,
                         o.lbo, o.sbo, o.swizzle128 ? "128-byte swizzle" : "no swizzle"));
  }
  for (const UmmaShape& sh : u.shapes) {
    out.line(fmt::format("constexpr unsigned UMMA_IDESC_{} = {:#x}u; // M {}, N {}, bf16 -> fp32, K-major A and B",
                         sh.name, sh.idesc, sh.m, sh.n));
  }
  for (const TmemRegion& r : u.tmem) {
    constant(out, fmt::format("TMEM_{}_COL", r.name), r.column); // r.columns columns
  }
  constant(out, "TMEM_COLUMNS", u.tmem_columns);
  constant(out, "TMEM_PROXY", u.proxy ? 1 : 0);
  out.line(fmt::format("constexpr long long TMEM_IMAGE_BYTES = {}; // per CTA, the sm_90a proxy only",
                       u.tmem_image_bytes));
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
  constant(out, "WARP_TABLE_MAX_SEQUENCES", k_warp_table_max_sequences); // no chunk_offsets kernel up to here
  constant(out, "CHECKPOINTS", plan.shape.checkpoints ? 1 : 0); // native checkpoints compiled in
  constant(out, "PREPARE_WALKS_ITEMS", plan.prepare_walks_items ? 1 : 0); // prepare_streams > 0: walk the items
  // numerics shared with the CPU emulation (reference/emulation_config.hpp)
  constant(out, "ANCHOR_ROWS", plan.numerics.anchor_rows);     // C_a = ANCHOR_ROWS x gate_scale
  constant(out, "INVERSE_BLOCK", plan.numerics.inverse_block); // forward-substitution blocks of (I + L)^-1
  constant(out, "MQK_DIAGONAL_FROM_RAW_ROWS", plan.numerics.mqk_diagonal_from_raw_rows ? 1 : 0);
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
  if (plan.umma) {
    emit_umma_constants(*plan.umma, out);
  }
  if (plan.tile_tensor_maps) {
    constant(out, "TMA_BOX_COLS", plan.tile_tensor_maps->box_cols); // tensor maps tma_q, tma_k, tma_g, tma_v
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
