#include "compiler/schedule_enums.hpp"

#include <array>
#include <utility>

namespace kda {
namespace {

template <typename Enum, std::size_t N>
using WordTable = std::array<std::pair<Enum, std::string_view>, N>;

template <typename Enum, std::size_t N>
std::string_view word_of(const WordTable<Enum, N>& table, Enum value) {
  for (const auto& [e, w] : table) {
    if (e == value) {
      return w;
    }
  }
  return "?";
}

template <typename Enum, std::size_t N>
std::optional<Enum> enum_of(const WordTable<Enum, N>& table, std::string_view word) {
  for (const auto& [e, w] : table) {
    if (w == word) {
      return e;
    }
  }
  return std::nullopt;
}

template <typename Enum, std::size_t N>
std::string words_of(const WordTable<Enum, N>& table) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) {
      out += (i + 1 == N) ? " or " : ", ";
    }
    out += '\'';
    out += table[i].second;
    out += '\'';
  }
  return out;
}

constexpr WordTable<Family, 4> k_family_words{{{Family::warp_mma, "warp_mma"},
                                               {Family::wgmma, "wgmma"},
                                               {Family::tcgen05, "tcgen05"},
                                               {Family::token, "token"}}};
constexpr WordTable<ExponentAnchor, 2> k_exponent_anchor_words{
    {{ExponentAnchor::none, "none"}, {ExponentAnchor::lower_bound, "lower_bound"}}};
constexpr WordTable<StatePrecision, 2> k_state_precision_words{
    {{StatePrecision::fp32, "fp32"}, {StatePrecision::bf16, "bf16"}}};
constexpr WordTable<StateResidence, 3> k_state_residence_words{{{StateResidence::registers, "registers"},
                                                                {StateResidence::shared, "shared"},
                                                                {StateResidence::tmem, "tmem"}}};
constexpr WordTable<Decomposition, 2> k_decomposition_words{
    {{Decomposition::fused, "fused"}, {Decomposition::decomposed, "decomposed"}}};
constexpr WordTable<GridKind, 3> k_grid_kind_words{{{GridKind::direct, "direct"},
                                                    {GridKind::persistent, "persistent"},
                                                    {GridKind::small_bh_split, "small_bh_split"}}};
constexpr WordTable<Region, 2> k_region_words{{{Region::stage, "stage"}, {Region::shared, "shared"}}};
constexpr WordTable<DType, 7> k_dtype_words{{{DType::bf16, "bf16"},
                                             {DType::fp16, "fp16"},
                                             {DType::fp32, "fp32"},
                                             {DType::u32, "u32"},
                                             {DType::u64, "u64"},
                                             {DType::i32, "i32"},
                                             {DType::i64, "i64"}}};
constexpr WordTable<LayoutKind, 2> k_layout_kind_words{{{LayoutKind::fixed, "fixed"}, {LayoutKind::packed, "packed"}}};
constexpr WordTable<KernelRole, 4> k_kernel_role_words{{{KernelRole::fused, "fused"},
                                                        {KernelRole::prepare, "prepare"},
                                                        {KernelRole::recurrence, "recurrence"},
                                                        {KernelRole::sequence_table, "sequence_table"}}};
constexpr WordTable<MqkDiagonal, 2> k_mqk_diagonal_words{
    {{MqkDiagonal::operands, "operands"}, {MqkDiagonal::raw_rows, "raw_rows"}}};
constexpr WordTable<Backend, 2> k_backend_words{{{Backend::cuda, "cuda"}, {Backend::llvm, "llvm"}}};

} // namespace

std::int64_t dtype_size(DType dtype) {
  switch (dtype) {
  case DType::bf16:
  case DType::fp16:
    return 2;
  case DType::fp32:
  case DType::u32:
  case DType::i32:
    return 4;
  case DType::u64:
  case DType::i64:
    return 8;
  }
  return 0;
}

#define KDA_DEFINE_ENUM_WORDS(Enum, fn)                                                                      \
  std::string_view to_string(Enum value) { return word_of(k_##fn##_words, value); }                          \
  std::optional<Enum> parse_##fn(std::string_view word) { return enum_of(k_##fn##_words, word); }            \
  std::string fn##_words() { return words_of(k_##fn##_words); }

KDA_DEFINE_ENUM_WORDS(Family, family)
KDA_DEFINE_ENUM_WORDS(ExponentAnchor, exponent_anchor)
KDA_DEFINE_ENUM_WORDS(StatePrecision, state_precision)
KDA_DEFINE_ENUM_WORDS(StateResidence, state_residence)
KDA_DEFINE_ENUM_WORDS(Decomposition, decomposition)
KDA_DEFINE_ENUM_WORDS(GridKind, grid_kind)
KDA_DEFINE_ENUM_WORDS(Region, region)
KDA_DEFINE_ENUM_WORDS(DType, dtype)
KDA_DEFINE_ENUM_WORDS(LayoutKind, layout_kind)
KDA_DEFINE_ENUM_WORDS(KernelRole, kernel_role)
KDA_DEFINE_ENUM_WORDS(MqkDiagonal, mqk_diagonal)
KDA_DEFINE_ENUM_WORDS(Backend, backend)

#undef KDA_DEFINE_ENUM_WORDS

} // namespace kda
