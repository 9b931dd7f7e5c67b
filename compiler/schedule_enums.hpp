/// \file
/// The enumerations of the schedule model and their JSON spellings. The JSON
/// word, the C++ enumerator and the generated-code word are the same.
#pragma once

#include "kdajit/family.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kda {

enum class ExponentAnchor { none, lower_bound };
enum class StatePrecision { fp32, bf16 };
enum class StateResidence { registers, shared, tmem };
enum class Decomposition { fused, decomposed };
enum class GridKind { direct, persistent, small_bh_split };
enum class Region { stage, shared };
enum class DType { bf16, fp16, fp32, u32, u64, i32, i64 };
enum class LayoutKind { fixed, packed };
/// `sequence_table`: the generator's own kernel of packed input (each
/// sequence's first chunk and the longest-first order); never declared by a
/// schedule.
enum class KernelRole { fused, prepare, recurrence, sequence_table };
enum class MqkDiagonal { operands, raw_rows };
/// What writes a schedule's kernels: CUDA C++ from templates/ compiled by
/// NVRTC, or LLVM IR written by compiler/ir/ and lowered by LLVM's NVPTX
/// backend (the `token` family).
enum class Backend { cuda, llvm };

/// Bytes of one element.
std::int64_t dtype_size(DType dtype);

// to_string / parse pairs. `parse_*` returns nothing for an unknown word;
// `*_words` lists the accepted words for messages ("'a', 'b' or 'c'").
#define KDA_DECLARE_ENUM_WORDS(Enum, fn)                                                                     \
  std::string_view to_string(Enum value);                                                                    \
  std::optional<Enum> parse_##fn(std::string_view word);                                                     \
  std::string fn##_words();

KDA_DECLARE_ENUM_WORDS(Family, family)
KDA_DECLARE_ENUM_WORDS(ExponentAnchor, exponent_anchor)
KDA_DECLARE_ENUM_WORDS(StatePrecision, state_precision)
KDA_DECLARE_ENUM_WORDS(StateResidence, state_residence)
KDA_DECLARE_ENUM_WORDS(Decomposition, decomposition)
KDA_DECLARE_ENUM_WORDS(GridKind, grid_kind)
KDA_DECLARE_ENUM_WORDS(Region, region)
KDA_DECLARE_ENUM_WORDS(DType, dtype)
KDA_DECLARE_ENUM_WORDS(LayoutKind, layout_kind)
KDA_DECLARE_ENUM_WORDS(KernelRole, kernel_role)
KDA_DECLARE_ENUM_WORDS(MqkDiagonal, mqk_diagonal)
KDA_DECLARE_ENUM_WORDS(Backend, backend)

#undef KDA_DECLARE_ENUM_WORDS

} // namespace kda
