#include "compiler/lower/passes.hpp"

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
};

std::int64_t size_of(ArgType t) {
  return t == ArgType::i32 || t == ArgType::f32 ? 4 : 8;
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

ArgAbi plan_arg_abi() {
  ArgAbi abi;
  std::int64_t offset = 0;
  for (const FieldSpec& spec : k_fields) {
    const std::int64_t size = size_of(spec.type);
    offset = (offset + size - 1) / size * size;
    abi.fields.push_back({spec.name, spec.type, spec.c_type, offset, size});
    offset += size;
  }
  abi.size = (offset + abi.alignment - 1) / abi.alignment * abi.alignment;
  return abi;
}

} // namespace kda
