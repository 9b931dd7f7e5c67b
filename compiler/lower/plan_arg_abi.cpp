#include "compiler/lower/passes.hpp"

#include <algorithm>

namespace kda {
namespace {

struct FieldSpec {
  const char* name;
  ArgType type;
  const char* c_type;
};

// The parameter struct of every entry point, in declaration order. Sizes and
// strides are in elements; the runtime fills each field by name.
constexpr FieldSpec k_fields[] = {
    {"q", ArgType::pointer, "const kda::bf16*"},
    {"k", ArgType::pointer, "const kda::bf16*"},
    {"v", ArgType::pointer, "const kda::bf16*"},
    {"g", ArgType::pointer, "const kda::bf16*"},
    {"beta", ArgType::pointer, "const kda::bf16*"},
    {"a_log", ArgType::pointer, "const float*"},
    {"dt_bias", ArgType::pointer, "const float*"},
    {"out", ArgType::pointer, "kda::bf16*"},
    {"state_in", ArgType::pointer, "const void*"},
    {"state_out", ArgType::pointer, "void*"},
    {"cu_seqlens", ArgType::pointer, "const void*"},
    {"chunk_offsets", ArgType::pointer, "int*"},
    {"workspace", ArgType::pointer, "kda::u8*"},
    {"beta_token_stride", ArgType::i64, "kda::i64"},
    {"seq_len", ArgType::i64, "kda::i64"},
    {"total_tokens", ArgType::i64, "kda::i64"},
    {"num_seqs", ArgType::i32, "int"},
    {"heads", ArgType::i32, "int"},
    {"offsets_i64", ArgType::i32, "int"},
    {"scale", ArgType::f32, "float"},
    {"gate_scale", ArgType::f32, "float"},
    // A prepare kernel running beside the recurrence (schedule prepare_overlap):
    // per-record ready flags (null: none), this call's epoch, and the chunk-major
    // prepare grid's first local chunk.
    {"ready_flags", ArgType::pointer, "kda::u32*"},
    {"ready_epoch", ArgType::i32, "int"},
    {"chunk_begin", ArgType::i32, "int"},
    {"chunk_major", ArgType::i32, "int"},
    // Caller features (v4, kernel_plan.hpp PlanFeatures). A state pool:
    // sequence n's state is slot state_indices[n] (null: slot n), slots
    // state_slot_stride elements apart. seq_order: the packed sequences'
    // order of the recurrent grid (null: longest first). Checkpoints (plans
    // that compile them in): bf16 rows from row checkpoint_starts[n] of
    // sequence n, one every checkpoint_chunks chunks (0: none).
    {"state_indices", ArgType::pointer, "const int*"},
    {"state_slot_stride", ArgType::i64, "kda::i64"},
    {"seq_order", ArgType::pointer, "const int*"},
    {"checkpoints", ArgType::pointer, "kda::bf16*"},
    {"checkpoint_starts", ArgType::pointer, "const kda::i64*"},
    {"checkpoint_chunks", ArgType::i32, "int"},
    // v5. A prepare kernel beside a persistent recurrence of prepare_streams
    // CTAs (plans whose prepare walks the items, PREPARE_WALKS_ITEMS): its
    // CTAs walk the records of those CTAs' items (0: its grid names its chunk).
    {"prepare_streams", ArgType::i32, "int"},
};

std::int64_t size_of(ArgType t) {
  return t == ArgType::i32 || t == ArgType::f32 ? 4 : t == ArgType::tensor_map ? 128 : 8;
}

std::int64_t alignment_of(ArgType t) {
  return t == ArgType::tensor_map ? 64 : size_of(t);
}

} // namespace

const ArgField* ArgAbi::find(const std::string& name) const {
  for (const ArgField& f : fields) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

ArgAbi plan_arg_abi(const std::optional<TileTensorMapPlan>& tensor_maps,
                    const std::optional<CheckpointTensorMapPlan>& checkpoint_map,
                    const std::optional<StateTensorMapPlan>& state_map) {
  ArgAbi abi;
  std::int64_t offset = 0;
  auto add = [&](const std::string& name, ArgType type, const std::string& c_type) {
    const std::int64_t size = size_of(type);
    const std::int64_t align = alignment_of(type);
    offset = (offset + align - 1) / align * align;
    abi.fields.push_back({name, type, c_type, offset, size});
    abi.alignment = std::max(abi.alignment, align);
    offset += size;
  };
  for (const FieldSpec& spec : k_fields) {
    add(spec.name, spec.type, spec.c_type);
  }
  // TMA tensor maps of the token tensors (plans that load whole chunks with
  // TMA): CUtensorMap bytes, 64-byte aligned, addressed by the kernel in
  // param space.
  if (tensor_maps) {
    for (const std::string& tensor : tensor_maps->tensors) {
      add("tma_" + tensor, ArgType::tensor_map, "kda::TensorMapBytes");
    }
  }
  if (checkpoint_map) {
    add("tma_checkpoints", ArgType::tensor_map, "kda::TensorMapBytes");
  }
  if (state_map) {
    add("tma_state", ArgType::tensor_map, "kda::TensorMapBytes");
  }
  abi.size = (offset + abi.alignment - 1) / abi.alignment * abi.alignment;
  return abi;
}

} // namespace kda
