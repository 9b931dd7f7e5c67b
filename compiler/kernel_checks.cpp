#include "compiler/schedule_checks.hpp"

#include <fmt/format.h>

#include <set>

namespace kda {
namespace {

constexpr int k_max_warps_per_cta = 32;          // 1,024 threads
constexpr int k_register_file_per_sm = 65'536;   // 32-bit registers
constexpr int k_max_stages = 16;

bool is_phase_name(const std::string& s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return true;
}

void check_phases(const KernelDecl& kernel, std::vector<Diagnostic>& sink) {
  const std::string path = kernel.json_path + "/phases";
  if (kernel.phases.size() < 2) {
    sink.push_back({path, "at least two phases are needed (a lifetime spans [first, last))"});
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < kernel.phases.size(); ++i) {
    const std::string& p = kernel.phases[i];
    if (!is_phase_name(p)) {
      sink.push_back({fmt::format("{}/{}", path, i), fmt::format("phase name '{}' must be lowercase [a-z0-9_]+", p)});
    }
    if (!seen.insert(p).second) {
      sink.push_back({fmt::format("{}/{}", path, i), fmt::format("phase '{}' is listed twice", p)});
    }
  }
}

void check_chunks_per_cta(const KernelDecl& kernel, std::vector<Diagnostic>& sink) {
  const std::string path = kernel.json_path + "/chunks_per_cta";
  if (kernel.chunks_per_cta < 1 || kernel.chunks_per_cta > 64) {
    sink.push_back({path, fmt::format("{} chunks per CTA is outside 1..64", kernel.chunks_per_cta)});
  } else if (kernel.chunks_per_cta > 1 && kernel.role != KernelRole::prepare) {
    sink.push_back({path, fmt::format("only a chunk-parallel 'prepare' kernel takes several chunks per CTA (this one "
                                      "is '{}')",
                                      to_string(kernel.role))});
  }
}

// An early start only follows a kernel of the same call: the recurrence of a
// decomposed design, after its prepare kernel, on a target with griddepcontrol.
void check_programmatic_launch(const Schedule& schedule, const KernelDecl& kernel, const Target& target,
                               std::vector<Diagnostic>& sink) {
  if (!kernel.programmatic_launch) {
    return;
  }
  const std::string path = kernel.json_path + "/programmatic_launch";
  if (target.cc_major < 9) {
    sink.push_back({path, fmt::format("a programmatic launch (griddepcontrol) needs sm_90 or later, not available on {}",
                                      target.name)});
  }
  if (schedule.decomposition != Decomposition::decomposed || kernel.role != KernelRole::recurrence) {
    sink.push_back({path, fmt::format("only a decomposed design's recurrence kernel starts early (it follows the "
                                      "call's prepare kernel); this one is '{}'",
                                      to_string(kernel.role))});
  }
}

void check_pipeline(const KernelDecl& kernel, std::vector<Diagnostic>& sink) {
  const std::string path = kernel.json_path + "/pipeline";
  const PipelineDecl& p = kernel.pipeline;
  if (p.stages < 1 || p.stages > k_max_stages) {
    sink.push_back({path + "/stages", fmt::format("{} stages is outside 1..{}", p.stages, k_max_stages)});
  }
  if (p.producer_groups < 1 || p.producer_groups > std::max(1, p.stages)) {
    sink.push_back({path + "/producer_groups",
                    fmt::format("{} producer groups is outside 1..{} (one group per ring slot at most)",
                                p.producer_groups, std::max(1, p.stages))});
  }
}

void check_warp_roles(const Schedule& schedule, const KernelDecl& kernel, const Target& target,
                      std::vector<Diagnostic>& sink) {
  const std::string path = kernel.json_path + "/warp_roles";
  if (kernel.warp_roles.empty()) {
    sink.push_back({path, "at least one warp role is required"});
    return;
  }
  std::set<std::string> names;
  std::int64_t registers_total = 0;
  bool all_have_registers = true;
  const WarpRole* producer = nullptr;
  std::int64_t first_warp = -1;
  std::int64_t next_warp = 0;
  bool any_registers = false;
  for (const WarpRole& role : kernel.warp_roles) {
    first_warp = next_warp;
    next_warp += std::max(0, role.warps);
    any_registers = any_registers || role.registers.has_value();
    if (!is_phase_name(role.name) || !names.insert(role.name).second) {
      sink.push_back({role.json_path + "/name", fmt::format("role name '{}' must be a unique lowercase word", role.name)});
    }
    if (role.warps < 1) {
      sink.push_back({role.json_path + "/warps", fmt::format("{} warps: a role has at least one warp", role.warps)});
    }
    if (role.name == "producer") {
      producer = &role;
    }
    if (!role.registers) {
      all_have_registers = false;
      continue;
    }
    const int regs = *role.registers;
    if (target.cc_major < 9 || target.variant == ArchVariant::plain) {
      sink.push_back({role.json_path + "/registers",
                      fmt::format("per-role registers need setmaxnreg (sm_90a and later), not available on {}",
                                  target.name)});
    }
    if (regs < 24 || regs > 256 || regs % 8 != 0) {
      sink.push_back({role.json_path + "/registers",
                      fmt::format("{} registers: setmaxnreg takes a multiple of 8 in 24..256", regs)});
    }
    registers_total += std::int64_t{regs} * 32 * std::max(0, role.warps);
    if (first_warp % 4 != 0 || role.warps % 4 != 0) {
      sink.push_back({role.json_path + "/registers",
                      fmt::format("setmaxnreg applies to whole warpgroups: role '{}' (warps {}..{}) must start at a "
                                  "multiple of 4 warps and span a multiple of 4",
                                  role.name, first_warp, first_warp + role.warps - 1)});
    }
  }
  if (kernel.warps() > k_max_warps_per_cta) {
    sink.push_back({path, fmt::format("{} warps ({} threads) exceed the {} warps ({} threads) of one CTA",
                                      kernel.warps(), with_thousands(kernel.threads()), k_max_warps_per_cta,
                                      with_thousands(32 * k_max_warps_per_cta))});
  }
  if (any_registers && !all_have_registers) {
    sink.push_back({path, "either every warp role declares 'registers' (setmaxnreg) or none does: the kernel's entry "
                          "register count is their total over its threads"});
  }
  if (all_have_registers && registers_total > k_register_file_per_sm) {
    sink.push_back({path, fmt::format("roles request {} registers in total, more than the {} of one SM",
                                      with_thousands(registers_total), with_thousands(k_register_file_per_sm))});
  } else if (all_have_registers && kernel.threads() > 0) {
    // the CTA starts with the entry count (the total over the threads, rounded
    // up to setmaxnreg's 8) on every thread, and setmaxnreg only moves those
    const std::int64_t threads = kernel.threads();
    const std::int64_t entry = (registers_total + threads * 8 - 1) / (threads * 8) * 8;
    if (entry * threads > k_register_file_per_sm) {
      const std::int64_t most = k_register_file_per_sm / (threads * 8) * 8;
      sink.push_back({path, fmt::format("roles request {} registers in total: over {} threads that is {} per thread "
                                        "(rounded up to a multiple of 8) at launch, {} in all, more than the {} of "
                                        "one SM; at most {} per thread ({} in total) fit",
                                        with_thousands(registers_total), threads, entry,
                                        with_thousands(entry * threads), with_thousands(k_register_file_per_sm), most,
                                        with_thousands(most * threads))});
    }
  }
  const int groups = kernel.pipeline.producer_groups;
  if (groups > 1) {
    if (producer == nullptr) {
      sink.push_back({path, fmt::format("{} producer groups need a role named 'producer'", groups)});
    } else if (producer->warps % groups != 0) {
      sink.push_back({producer->json_path + "/warps",
                      fmt::format("{} producer warps do not split into {} equal groups", producer->warps, groups)});
    }
  }
  (void)schedule;
}

} // namespace

void check_kernel_structure(const Schedule& schedule, const KernelDecl& kernel, const Target& target,
                            std::vector<Diagnostic>& sink) {
  check_phases(kernel, sink);
  check_pipeline(kernel, sink);
  check_chunks_per_cta(kernel, sink);
  check_programmatic_launch(schedule, kernel, target, sink);
  check_warp_roles(schedule, kernel, target, sink);
}

} // namespace kda
