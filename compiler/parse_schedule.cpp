#include "compiler/schedule.hpp"

#include "compiler/errors.hpp"
#include "compiler/json_reader.hpp"
#include "compiler/read_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

namespace kda {
namespace {

using nlohmann::json;

template <typename Enum>
std::vector<Enum> read_word_list(ObjectReader& reader, const std::string& key, bool required,
                                 std::optional<Enum> (*parse)(std::string_view), const std::string& accepted,
                                 std::vector<Diagnostic>& sink) {
  std::vector<Enum> out;
  const json* list = reader.array(key, required);
  if (list == nullptr) {
    return out;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string path = json_child_path(reader.path_of(key), i);
    const json& item = (*list)[i];
    if (!item.is_string()) {
      sink.push_back({path, fmt::format("expected a string, found {}", json_type_name(item))});
    } else if (std::optional<Enum> e = parse(item.get<std::string>())) {
      out.push_back(*e);
    } else {
      sink.push_back({path, fmt::format("unknown value '{}' (expected {})", item.get<std::string>(), accepted)});
    }
  }
  return out;
}

std::vector<std::string> read_string_list(ObjectReader& reader, const std::string& key, bool required,
                                          std::vector<Diagnostic>& sink) {
  std::vector<std::string> out;
  const json* list = reader.array(key, required);
  if (list == nullptr) {
    return out;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    if (item.is_string()) {
      out.push_back(item.get<std::string>());
    } else {
      sink.push_back({json_child_path(reader.path_of(key), i),
                      fmt::format("expected a string, found {}", json_type_name(item))});
    }
  }
  return out;
}

int narrow_int(std::optional<int> value, int fallback) {
  return value.value_or(fallback);
}

BufferDecl read_buffer(const json& value, const std::string& path, std::vector<Diagnostic>& sink) {
  BufferDecl b;
  b.json_path = path;
  ObjectReader r(value, path, sink);
  b.name = r.string("name", true).value_or("");
  b.purpose = r.string("purpose", false).value_or("");
  if (const json* shape = r.array("shape", true)) {
    for (std::size_t i = 0; i < shape->size(); ++i) {
      if ((*shape)[i].is_number_integer()) {
        b.shape.push_back((*shape)[i].get<std::int64_t>());
      } else {
        sink.push_back({json_child_path(r.path_of("shape"), i),
                        fmt::format("expected an integer, found {}", json_type_name((*shape)[i]))});
      }
    }
  }
  b.dtype = r.word<DType>("dtype", true, parse_dtype, dtype_words()).value_or(DType::bf16);
  b.alignment = r.integer("alignment", false).value_or(std::max<std::int64_t>(16, dtype_size(b.dtype)));
  b.region = r.word<Region>("region", true, parse_region, region_words()).value_or(Region::stage);
  if (const json* life = r.array("lifetime", true)) {
    if (life->size() != 2 || !(*life)[0].is_string() || !(*life)[1].is_string()) {
      r.report("lifetime", "expected [first phase written, last phase read] as two phase names");
    } else {
      b.lifetime = {(*life)[0].get<std::string>(), (*life)[1].get<std::string>()};
    }
  }
  b.alias = r.string("alias", false);
  b.offset = r.integer("offset", false);
  b.only_with = r.string("only_with", false);
  r.reject_unknown_keys();
  return b;
}

SmemDecl read_smem(const json& value, const std::string& path, std::vector<Diagnostic>& sink) {
  SmemDecl smem;
  smem.json_path = path;
  ObjectReader r(value, path, sink);
  if (const json* buffers = r.array("buffers", true)) {
    for (std::size_t i = 0; i < buffers->size(); ++i) {
      smem.buffers.push_back(read_buffer((*buffers)[i], json_child_path(r.path_of("buffers"), i), sink));
    }
  }
  r.reject_unknown_keys();
  return smem;
}

std::vector<WarpRole> read_warp_roles(ObjectReader& parent, std::vector<Diagnostic>& sink) {
  std::vector<WarpRole> roles;
  const json* list = parent.array("warp_roles", true);
  if (list == nullptr) {
    return roles;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    WarpRole role;
    role.json_path = json_child_path(parent.path_of("warp_roles"), i);
    ObjectReader r((*list)[i], role.json_path, sink);
    role.name = r.string("name", true).value_or("");
    role.warps = narrow_int(r.small_integer("warps", true), 0);
    if (r.field("registers", false) != nullptr) {
      role.registers = narrow_int(r.small_integer("registers", false), 0);
    }
    r.reject_unknown_keys();
    roles.push_back(std::move(role));
  }
  return roles;
}

PipelineDecl read_pipeline(ObjectReader& parent, std::vector<Diagnostic>& sink) {
  PipelineDecl pipeline;
  const json* value = parent.field("pipeline", true);
  if (value == nullptr) {
    return pipeline;
  }
  ObjectReader r(*value, parent.path_of("pipeline"), sink);
  pipeline.stages = narrow_int(r.small_integer("stages", true), 1);
  pipeline.producer_groups = narrow_int(r.small_integer("producer_groups", false), 1);
  r.reject_unknown_keys();
  return pipeline;
}

/// The kernel-level fields, read from the top level (fused) or a kernels[] entry.
void read_kernel_body(ObjectReader& r, KernelDecl& kernel, std::vector<Diagnostic>& sink) {
  kernel.phases = read_string_list(r, "phases", true, sink);
  kernel.pipeline = read_pipeline(r, sink);
  kernel.warp_roles = read_warp_roles(r, sink);
  kernel.min_blocks_per_sm = narrow_int(r.small_integer("min_blocks_per_sm", false), 0);
  kernel.chunks_per_cta = narrow_int(r.small_integer("chunks_per_cta", false), 1);
  kernel.exclusive_sm = r.boolean("exclusive_sm", false).value_or(false);
  kernel.programmatic_launch = r.boolean("programmatic_launch", false).value_or(false);
  if (const json* smem = r.field("smem", true)) {
    kernel.smem = read_smem(*smem, r.path_of("smem"), sink);
  }
}

Eligibility read_eligibility(const json& value, const std::string& path, std::vector<Diagnostic>& sink) {
  Eligibility e;
  ObjectReader r(value, path, sink);
  e.head_dim = narrow_int(r.small_integer("head_dim", false), 128);
  if (const json* heads = r.field("heads", false)) {
    ObjectReader h(*heads, r.path_of("heads"), sink);
    e.min_heads = narrow_int(h.small_integer("min", false), 1);
    if (h.field("max", false) != nullptr) {
      e.max_heads = narrow_int(h.small_integer("max", false), 0);
    }
    h.reject_unknown_keys();
  }
  if (const json* lb = r.field("lower_bound", true)) {
    ObjectReader l(*lb, r.path_of("lower_bound"), sink);
    e.lower_bound.min = l.number("min", true).value_or(e.lower_bound.min);
    e.lower_bound.max = l.number("max", true).value_or(e.lower_bound.max);
    l.reject_unknown_keys();
  }
  e.layouts = read_word_list<LayoutKind>(r, "layouts", true, parse_layout_kind, layout_kind_words(), sink);
  e.state_dtypes =
      read_word_list<StatePrecision>(r, "state_dtypes", true, parse_state_precision, state_precision_words(), sink);
  e.checkpoints = r.boolean("checkpoints", false).value_or(false);
  e.state_pool = r.boolean("state_pool", false).value_or(false);
  e.seq_order = r.boolean("seq_order", false).value_or(false);
  r.reject_unknown_keys();
  return e;
}

} // namespace

int KernelDecl::warps() const {
  // saturated so that threads() stays an int: the checks report any count
  // above a CTA's 32 warps long before this bound
  constexpr std::int64_t k_bound = std::numeric_limits<int>::max() / 32;
  std::int64_t total = 0;
  for (const WarpRole& role : warp_roles) {
    total = std::clamp<std::int64_t>(total + role.warps, -k_bound, k_bound);
  }
  return static_cast<int>(total);
}

int KernelDecl::phase_index(const std::string& phase) const {
  if (phase == k_end_phase) {
    return static_cast<int>(phases.size());
  }
  for (std::size_t i = 0; i < phases.size(); ++i) {
    if (phases[i] == phase) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::int64_t BufferDecl::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d <= 0) {
      return 0; // reported by check_buffer_decls
    }
    if (__builtin_mul_overflow(n, d, &n)) {
      return std::numeric_limits<std::int64_t>::max();
    }
  }
  return n;
}

std::int64_t BufferDecl::bytes() const {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(elements(), dtype_size(dtype), &out)) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return out;
}

Schedule parse_schedule(const json& document, const std::string& source) {
  std::vector<Diagnostic> sink;
  Schedule s;
  s.source = source;
  s.document = document;
  ObjectReader r(document, "", sink);
  if (!r.valid()) {
    throw ScheduleError(source, sink);
  }
  s.name = r.string("name", true).value_or("");
  s.description = r.string("description", false).value_or("");
  s.hardware_verified = r.boolean("hardware_verified", false).value_or(true);
  s.family = r.word<Family>("family", true, parse_family, family_words()).value_or(Family::warp_mma);
  s.backend = r.word<Backend>("backend", false, parse_backend, backend_words()).value_or(Backend::cuda);
  s.targets = read_string_list(r, "targets", true, sink);
  s.chunk_size = narrow_int(r.small_integer("chunk_size", true), 16);
  s.exponent_anchor = r.word<ExponentAnchor>("exponent_anchor", false, parse_exponent_anchor, exponent_anchor_words())
                          .value_or(ExponentAnchor::none);
  s.m_tile = narrow_int(r.small_integer("m_tile", true), 128);
  if (const json* state = r.field("state", true)) {
    ObjectReader st(*state, r.path_of("state"), sink);
    s.state.precision = st.word<StatePrecision>("precision", true, parse_state_precision, state_precision_words())
                            .value_or(StatePrecision::fp32);
    s.state.residence = st.word<StateResidence>("residence", true, parse_state_residence, state_residence_words())
                            .value_or(StateResidence::registers);
    st.reject_unknown_keys();
  }
  s.decomposition = r.word<Decomposition>("decomposition", false, parse_decomposition, decomposition_words())
                        .value_or(Decomposition::fused);
  s.grid = r.word<GridKind>("grid", false, parse_grid_kind, grid_kind_words()).value_or(GridKind::direct);
  s.tmem_columns = narrow_int(r.small_integer("tmem_columns", false), 0);
  if (const json* eligibility = r.field("eligibility", true)) {
    s.eligibility = read_eligibility(*eligibility, r.path_of("eligibility"), sink);
  }
  if (const json* numerics = r.field("numerics", false)) {
    ObjectReader n(*numerics, r.path_of("numerics"), sink);
    s.numerics.bf16_rounding = read_string_list(n, "bf16_rounding", false, sink);
    s.numerics.mqk_diagonal = n.word<MqkDiagonal>("mqk_diagonal", false, parse_mqk_diagonal, mqk_diagonal_words())
                                  .value_or(MqkDiagonal::operands);
    n.reject_unknown_keys();
  }

  if (const json* overlap = r.field("prepare_overlap", false)) {
    PrepareOverlapDecl o;
    o.json_path = r.path_of("prepare_overlap");
    ObjectReader ov(*overlap, o.json_path, sink);
    o.model.recurrence_us_per_chunk = ov.number("recurrence_us_per_chunk", true).value_or(0.0);
    o.model.prepare_chunks_per_us_per_sm = ov.number("prepare_chunks_per_us_per_sm", true).value_or(0.0);
    o.model.beside_recurrence_share = ov.number("beside_recurrence_share", true).value_or(0.0);
    o.model.min_lead_chunks = narrow_int(ov.small_integer("min_lead_chunks", true), 1);
    o.model.min_saving_us = ov.number("min_saving_us", true).value_or(0.0);
    ov.reject_unknown_keys();
    s.prepare_overlap = o;
  }

  if (s.decomposition == Decomposition::fused) {
    KernelDecl kernel;
    kernel.name = "main";
    kernel.role = KernelRole::fused;
    read_kernel_body(r, kernel, sink);
    if (r.field("kernels", false) != nullptr) {
      r.report("kernels", "a fused schedule has no 'kernels' (set \"decomposition\": \"decomposed\")");
    }
    s.kernels.push_back(std::move(kernel));
  } else {
    for (const char* key :
         {"phases", "pipeline", "warp_roles", "smem", "min_blocks_per_sm", "chunks_per_cta", "exclusive_sm",
          "programmatic_launch"}) {
      if (r.field(key, false) != nullptr) {
        r.report(key, fmt::format("'{}' belongs to each entry of 'kernels' in a decomposed schedule", key));
      }
    }
    if (const json* kernels = r.array("kernels", true)) {
      for (std::size_t i = 0; i < kernels->size(); ++i) {
        KernelDecl kernel;
        kernel.json_path = json_child_path("/kernels", i);
        ObjectReader k((*kernels)[i], kernel.json_path, sink);
        kernel.name = k.string("name", true).value_or("");
        kernel.role = k.word<KernelRole>("role", true, parse_kernel_role, kernel_role_words()).value_or(KernelRole::prepare);
        read_kernel_body(k, kernel, sink);
        k.reject_unknown_keys();
        s.kernels.push_back(std::move(kernel));
      }
    }
  }
  r.reject_unknown_keys();
  if (!sink.empty()) {
    throw ScheduleError(source, std::move(sink));
  }
  return s;
}

Schedule parse_schedule_text(const std::string& text, const std::string& source) {
  std::string error;
  std::optional<json> document = parse_json_bounded(text, error);
  if (!document) {
    throw ScheduleError(source, {{"", fmt::format("not valid JSON: {}", error)}});
  }
  return parse_schedule(*document, source);
}

Schedule load_schedule_file(const std::string& path) {
  FileText file = read_regular_file(path);
  if (!file.problem.empty()) {
    throw ScheduleError(path, {{"", "cannot read the file: " + file.problem}});
  }
  return parse_schedule_text(file.text, path);
}

} // namespace kda
