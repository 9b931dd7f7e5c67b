#include "cache/miss_reason.hpp"

#include "compiler/errors.hpp"

#include <iterator>

namespace kda::cache {
namespace {

struct MissReasonInfo {
  MissReason reason;
  std::string_view name;
  Statistic statistic;
  bool bad_entry;
};

constexpr MissReasonInfo k_miss_reason_table[] = {
    {MissReason::not_found, "not_found", Statistic::miss_not_found, false},
    {MissReason::corrupt_manifest, "corrupt_manifest", Statistic::miss_corrupt, true},
    {MissReason::checksum_mismatch, "checksum_mismatch", Statistic::miss_checksum, true},
    {MissReason::version_mismatch, "version_mismatch", Statistic::miss_version, true},
    {MissReason::key_mismatch, "key_mismatch", Statistic::miss_key, true},
    {MissReason::memory_only, "memory_only", Statistic::miss_memory_only, false},
};

static_assert(std::size(k_miss_reason_table) == k_miss_reason_count, "k_miss_reason_table must cover enum MissReason");

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < std::size(k_miss_reason_table); ++i) {
    if (static_cast<std::size_t>(k_miss_reason_table[i].reason) != i) {
      return false;
    }
  }
  return true;
}
static_assert(table_in_enum_order(), "k_miss_reason_table must list enum MissReason in order");

const MissReasonInfo& info(MissReason reason) {
  const auto index = static_cast<std::size_t>(reason);
  KDA_INTERNAL_ASSERT(index < k_miss_reason_count, "miss reason out of range");
  return k_miss_reason_table[index];
}

} // namespace

std::string_view miss_reason_name(MissReason reason) {
  return info(reason).name;
}

Statistic miss_statistic(MissReason reason) {
  return info(reason).statistic;
}

bool is_bad_entry(MissReason reason) {
  return info(reason).bad_entry;
}

} // namespace kda::cache
