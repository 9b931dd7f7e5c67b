#include "compiler/schedule_checks.hpp"

#include "compiler/exponent_range.hpp"
#include "compiler/validated_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace kda {

std::string with_thousands(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::islower(static_cast<unsigned char>(s[0])) || s[0] == '_')) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string family_list(const Target& target) {
  std::string out;
  for (Family f : target.families) {
    out += fmt::format("{}'{}'", out.empty() ? "" : ", ", to_string(f));
  }
  return out;
}

} // namespace

void check_schedule_fields(const Schedule& s, std::vector<Diagnostic>& sink) {
  if (!is_identifier(s.name)) {
    sink.push_back({"/name", fmt::format("name '{}' must be a lowercase identifier ([a-z_][a-z0-9_]*): it labels "
                                         "generated kernels",
                                         s.name)});
  }
  if (s.chunk_size != 16 && s.chunk_size != 32 && s.chunk_size != 64) {
    sink.push_back({"/chunk_size", fmt::format("chunk_size {} is not one of 16, 32, 64", s.chunk_size)});
  }
  const Backend family_backend = s.family == Family::token ? Backend::llvm : Backend::cuda;
  if (s.backend != family_backend) {
    sink.push_back({"/backend", fmt::format("family '{}' is written by the '{}' backend, not '{}'", to_string(s.family),
                                            to_string(family_backend), to_string(s.backend))});
  }
  if (s.m_tile != 64 && s.m_tile != 128) {
    sink.push_back({"/m_tile", fmt::format("m_tile {} is not 64 or 128 (value rows per CTA)", s.m_tile)});
  }
  if (s.eligibility.head_dim != 128) {
    sink.push_back({"/eligibility/head_dim",
                    fmt::format("head_dim {} is not supported: kdajit kernels are built for 128", s.eligibility.head_dim)});
  }
  if (s.eligibility.min_heads < 1) {
    sink.push_back({"/eligibility/heads/min", fmt::format("min heads {} must be at least 1", s.eligibility.min_heads)});
  }
  if (s.eligibility.max_heads && *s.eligibility.max_heads < s.eligibility.min_heads) {
    sink.push_back({"/eligibility/heads/max", fmt::format("max heads {} is below min heads {}",
                                                          *s.eligibility.max_heads, s.eligibility.min_heads)});
  }
  if (s.eligibility.layouts.empty()) {
    sink.push_back({"/eligibility/layouts", "at least one layout ('fixed' or 'packed') is required"});
  }
  if (s.eligibility.state_dtypes.empty()) {
    sink.push_back({"/eligibility/state_dtypes", "at least one state dtype ('fp32' or 'bf16') is required"});
  }
  if (s.grid == GridKind::small_bh_split) {
    // Parsed so that a schedule can name it, but no generator builds it: a
    // schedule saying so must not quietly get the direct grid instead.
    // ('persistent' is a family recipe's: find_family_recipe says which.)
    sink.push_back({"/grid", fmt::format("grid '{}' has no code generator yet: the recurrent grids are 'direct' "
                                         "(one CTA per (sequence, head) and row block) and, for the recipes that "
                                         "have it, 'persistent'",
                                         to_string(s.grid))});
  }
  if (s.decomposition == Decomposition::fused && s.kernels.size() != 1) {
    sink.push_back({"/", "a fused schedule has exactly one kernel"});
  }
  if (s.decomposition == Decomposition::decomposed) {
    std::set<KernelRole> roles;
    std::set<std::string> names;
    for (const KernelDecl& k : s.kernels) {
      if (k.role == KernelRole::sequence_table) {
        sink.push_back({k.json_path + "/role", "'sequence_table' is the generator's own kernel (the chunk offsets of "
                                               "packed input); a schedule does not declare it"});
      } else if (k.role == KernelRole::fused) {
        sink.push_back({k.json_path + "/role", "a kernel of a decomposed schedule is 'prepare' or 'recurrence'"});
      }
      if (!roles.insert(k.role).second) {
        sink.push_back({k.json_path + "/role", fmt::format("a second '{}' kernel", to_string(k.role))});
      }
      if (!is_identifier(k.name) || !names.insert(k.name).second) {
        sink.push_back({k.json_path + "/name", fmt::format("kernel name '{}' must be a unique lowercase identifier", k.name)});
      }
    }
    if (!roles.contains(KernelRole::prepare) || !roles.contains(KernelRole::recurrence)) {
      sink.push_back({"/kernels", "a decomposed schedule needs one 'prepare' and one 'recurrence' kernel"});
    }
  }
}

void check_prepare_overlap(const Schedule& s, std::vector<Diagnostic>& sink) {
  if (!s.prepare_overlap) {
    return;
  }
  const PrepareOverlapDecl& decl = *s.prepare_overlap;
  const PrepareOverlapModel& o = decl.model;
  if (s.decomposition != Decomposition::decomposed) {
    sink.push_back({decl.json_path, "only a decomposed design (a prepare and a recurrence kernel) can overlap them"});
  }
  auto positive = [&](const char* key, double value) {
    if (!(value > 0.0) || !std::isfinite(value)) {
      sink.push_back({decl.json_path + "/" + key, fmt::format("{} must be a positive number, not {}", key, value)});
    }
  };
  positive("recurrence_us_per_chunk", o.recurrence_us_per_chunk);
  positive("prepare_chunks_per_us_per_sm", o.prepare_chunks_per_us_per_sm);
  positive("beside_recurrence_share", o.beside_recurrence_share);
  if (o.beside_recurrence_share > 1.0) {
    sink.push_back({decl.json_path + "/beside_recurrence_share",
                    fmt::format("beside_recurrence_share is a fraction of an SM's prepare rate (at most 1), not {}",
                                o.beside_recurrence_share)});
  }
  if (!(o.min_saving_us >= 0.0) || !std::isfinite(o.min_saving_us)) {
    sink.push_back({decl.json_path + "/min_saving_us",
                    fmt::format("min_saving_us must be a number >= 0, not {}", o.min_saving_us)});
  }
  if (o.min_lead_chunks < 1) {
    sink.push_back({decl.json_path + "/min_lead_chunks",
                    fmt::format("min_lead_chunks must be at least 1 (the recurrence starts after the first chunk of "
                                "every pair is prepared), not {}",
                                o.min_lead_chunks)});
  }
}

void check_target(const Schedule& s, const Target& target, std::vector<Diagnostic>& sink) {
  bool listed = false;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < s.targets.size(); ++i) {
    const std::string& name = s.targets[i];
    const std::string path = fmt::format("/targets/{}", i);
    if (!find_target(name)) {
      sink.push_back({path, fmt::format("unknown target '{}' (known: {})", name, known_target_names())});
    } else if (const std::optional<Target> t = find_target(name); t && !t->allows(s.family)) {
      sink.push_back({path, fmt::format("family '{}' is not allowed on {} (allowed: {})", to_string(s.family), name,
                                        family_list(*t))});
    }
    if (!seen.insert(name).second) {
      sink.push_back({path, fmt::format("target '{}' is listed twice", name)});
    }
    listed = listed || name == target.name;
    // the sm_90a proxy runs any tcgen05 schedule that lists a tcgen05 target
    listed = listed || (target.tcgen05_proxy && s.family == Family::tcgen05 && find_target(name) &&
                        find_target(name)->allows(Family::tcgen05) && !find_target(name)->tcgen05_proxy);
    // the sm_120a proxy runs any schedule that lists sm_120a
    listed = listed || (!target.proxy_of.empty() && name == target.proxy_of);
  }
  if (s.targets.empty()) {
    sink.push_back({"/targets", "at least one target is required"});
  }
  if (!listed) {
    constexpr std::size_t k_names_shown = 16;
    std::string names;
    for (std::size_t i = 0; i < s.targets.size() && i < k_names_shown; ++i) {
      names += names.empty() ? s.targets[i] : ", " + s.targets[i];
    }
    if (s.targets.size() > k_names_shown) {
      names += fmt::format(" and {} more", s.targets.size() - k_names_shown);
    }
    sink.push_back({"/targets", fmt::format("the schedule does not list target {} (it lists: {})", target.name,
                                            names.empty() ? "none" : names)});
  }
  if (!target.allows(s.family)) {
    sink.push_back({"/family", fmt::format("family '{}' is not allowed on {} (allowed: {})", to_string(s.family),
                                           target.name, family_list(target))});
  }
}

void check_lower_bound_range(const Schedule& s, std::vector<Diagnostic>& sink) {
  const LowerBoundRange& lb = s.eligibility.lower_bound;
  if (!(lb.min < 0.0) || !(lb.max <= 0.0) || !(lb.min < lb.max)) {
    sink.push_back({"/eligibility/lower_bound",
                    fmt::format("lower_bound range [{}, {}) must satisfy min < max <= 0", lb.min, lb.max)});
    return;
  }
  if (s.chunk_size <= 0) {
    return;
  }
  if (!lower_bound_is_safe(lb.min, s.chunk_size, s.exponent_anchor)) {
    const double rows = effective_exponent_rows(s.chunk_size, s.exponent_anchor);
    sink.push_back({"/eligibility/lower_bound/min",
                    fmt::format("lower_bound {} is not safe in BF16 for chunk {} {}: operands reach 2^{:.1f} "
                                "({} x {} x log2 e) but must stay below 2^{}; the safe range is "
                                "|lower_bound| < {:.4f}",
                                lb.min, s.chunk_size,
                                s.exponent_anchor == ExponentAnchor::lower_bound ? "with the lower_bound anchor"
                                                                                 : "without an anchor",
                                operand_exponent(lb.min, s.chunk_size, s.exponent_anchor), rows, std::fabs(lb.min),
                                k_max_operand_exponent,
                                safe_lower_bound_magnitude(s.chunk_size, s.exponent_anchor))});
  }
}

void check_state_and_tmem(const Schedule& s, const Target& target, std::vector<Diagnostic>& sink) {
  const bool tcgen05 = s.family == Family::tcgen05;
  if (s.state.residence == StateResidence::tmem && !tcgen05) {
    sink.push_back({"/state/residence", fmt::format("state residence 'tmem' needs family 'tcgen05' (this is '{}')",
                                                    to_string(s.family))});
  }
  if (!tcgen05) {
    if (s.tmem_columns != 0) {
      sink.push_back({"/tmem_columns", fmt::format("{} TMEM columns declared, but only tcgen05 schedules use TMEM",
                                                   s.tmem_columns)});
    }
    return;
  }
  if (s.tmem_columns <= 0) {
    sink.push_back({"/tmem_columns", "a tcgen05 schedule declares the TMEM columns it uses (1..512)"});
    return;
  }
  if (s.tmem_columns > 512) {
    sink.push_back({"/tmem_columns", fmt::format("{} TMEM columns used exceeds the 512 columns of tensor memory "
                                                 "(the allocation would be {} columns)",
                                                 s.tmem_columns, tmem_allocation_columns(s.tmem_columns))});
  } else if (target.tmem_columns > 0 && tmem_allocation_columns(s.tmem_columns) > target.tmem_columns) {
    sink.push_back({"/tmem_columns", fmt::format("allocation of {} columns exceeds {}'s {} TMEM columns",
                                                 tmem_allocation_columns(s.tmem_columns), target.name,
                                                 target.tmem_columns)});
  }
  if (s.state.residence == StateResidence::tmem && s.tmem_columns < 128) {
    sink.push_back({"/tmem_columns", fmt::format("the fp32 state (one 128-column row per value row) needs 128 TMEM "
                                                 "columns, but only {} are declared",
                                                 s.tmem_columns)});
  }
}

} // namespace kda
