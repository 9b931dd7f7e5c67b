#include "compiler/schedule_checks.hpp"

#include "compiler/plan_smem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace kda {

constexpr std::int64_t k_reserved_smem_per_block = 1'024;
namespace {

constexpr std::int64_t k_max_alignment = 1024; // the 128-byte swizzle atom repeat

bool is_power_of_two(std::int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

std::string phase_list(const KernelDecl& kernel) {
  std::string out;
  for (const std::string& p : kernel.phases) {
    out += out.empty() ? p : ", " + p;
  }
  return out + "; a lifetime may also end at '" + k_end_phase + "'";
}

void check_lifetime(const KernelDecl& kernel, const BufferDecl& b, std::vector<Diagnostic>& sink) {
  const std::string path = b.json_path + "/lifetime";
  const int first = b.lifetime.first == k_end_phase ? -1 : kernel.phase_index(b.lifetime.first);
  const int last = kernel.phase_index(b.lifetime.last);
  for (const auto& [index, phase, slot] : {std::tuple{first, b.lifetime.first, 0}, {last, b.lifetime.last, 1}}) {
    if (index < 0) {
      sink.push_back({fmt::format("{}/{}", path, slot),
                      fmt::format("'{}' is not a phase of kernel '{}' (phases: {})", phase, kernel.name,
                                  phase_list(kernel))});
    }
  }
  if (first >= 0 && last >= 0 && first >= last) {
    sink.push_back({path, fmt::format("lifetime ['{}', '{}') is empty: the phase first written must come before the "
                                      "phase last read",
                                      b.lifetime.first, b.lifetime.last)});
  }
}

void check_alias(const BufferDecl& b, const std::map<std::string, const BufferDecl*>& earlier,
                 const std::set<std::string>& all_names, std::vector<Diagnostic>& sink) {
  if (!b.alias) {
    return;
  }
  const std::string path = b.json_path + "/alias";
  auto it = earlier.find(*b.alias);
  if (*b.alias == b.name) {
    sink.push_back({path, fmt::format("'{}' cannot alias itself", b.name)});
  } else if (it == earlier.end()) {
    sink.push_back({path, all_names.contains(*b.alias)
                              ? fmt::format("alias '{}' is declared after '{}': an alias names an earlier buffer",
                                            *b.alias, b.name)
                              : fmt::format("alias '{}' names no buffer of this plan", *b.alias)});
  } else if (it->second->region != b.region) {
    sink.push_back({path, fmt::format("alias '{}' is in region '{}' but '{}' is in region '{}'", *b.alias,
                                      to_string(it->second->region), b.name, to_string(b.region))});
  }
}

// A buffer `only_with` a feature is absent from plans without it, so no
// buffer may share its bytes by an alias (or it would lose them).
void check_only_with(const BufferDecl& b, const std::map<std::string, const BufferDecl*>& earlier,
                     std::vector<Diagnostic>& sink) {
  if (b.only_with && *b.only_with != k_checkpoints_feature) {
    sink.push_back({b.json_path + "/only_with", fmt::format("'{}' is only_with '{}': the one feature compiled into "
                                                            "kernels is '{}'",
                                                            b.name, *b.only_with, k_checkpoints_feature)});
  }
  if (!b.alias) {
    return;
  }
  auto it = earlier.find(*b.alias);
  if (b.only_with) {
    sink.push_back({b.json_path + "/alias", fmt::format("'{}' is only_with '{}' and cannot alias another buffer",
                                                        b.name, *b.only_with)});
  } else if (it != earlier.end() && it->second->only_with) {
    sink.push_back({b.json_path + "/alias", fmt::format("alias '{}' is only_with '{}', absent from plans without it",
                                                        *b.alias, *it->second->only_with)});
  }
}

// "[4611686018427387905 x 4]"
std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i == 0 ? "" : " x ") + std::to_string(shape[i]);
  }
  return out + "]";
}

} // namespace

std::string phase_name(const KernelDecl& kernel, int index) {
  return index >= 0 && index < static_cast<int>(kernel.phases.size()) ? kernel.phases[static_cast<std::size_t>(index)]
                                                                       : std::string(k_end_phase);
}

void check_buffer_decls(const KernelDecl& kernel, std::vector<Diagnostic>& sink) {
  std::set<std::string> all_names;
  for (const BufferDecl& b : kernel.smem.buffers) {
    all_names.insert(b.name);
  }
  std::map<std::string, const BufferDecl*> earlier;
  for (const BufferDecl& b : kernel.smem.buffers) {
    if (b.name.empty() || earlier.contains(b.name)) {
      sink.push_back({b.json_path + "/name", fmt::format("buffer name '{}' is empty or used twice", b.name)});
    }
    if (b.shape.empty()) {
      sink.push_back({b.json_path + "/shape", "shape needs at least one dimension"});
    }
    bool dimensions_ok = true;
    for (std::size_t i = 0; i < b.shape.size(); ++i) {
      if (b.shape[i] <= 0 || b.shape[i] > k_max_buffer_dimension) {
        dimensions_ok = false;
        sink.push_back({fmt::format("{}/shape/{}", b.json_path, i),
                        fmt::format("dimension {} of '{}' is {}; dimensions are 1..{}", i, b.name, b.shape[i],
                                    k_max_buffer_dimension)});
      }
    }
    if (dimensions_ok && b.bytes() > k_max_buffer_bytes) {
      sink.push_back({b.json_path + "/shape",
                      fmt::format("'{}' ({} {}) takes more than {} bytes: no SMEM holds it", b.name,
                                  shape_text(b.shape), to_string(b.dtype), k_max_buffer_bytes)});
    }
    if (!is_power_of_two(b.alignment) || b.alignment < dtype_size(b.dtype) || b.alignment > k_max_alignment) {
      sink.push_back({b.json_path + "/alignment",
                      fmt::format("alignment {} of '{}' must be a power of two from {} ({} element) to {}",
                                  b.alignment, b.name, dtype_size(b.dtype), to_string(b.dtype), k_max_alignment)});
    }
    if (b.offset && *b.offset > k_max_pinned_offset) {
      sink.push_back({b.json_path + "/offset", fmt::format("pinned offset {} of '{}' is beyond {} bytes: no SMEM "
                                                           "reaches it",
                                                           *b.offset, b.name, k_max_pinned_offset)});
    } else if (b.offset && (*b.offset < 0 || (is_power_of_two(b.alignment) && *b.offset % b.alignment != 0))) {
      sink.push_back({b.json_path + "/offset", fmt::format("pinned offset {} of '{}' is not a non-negative multiple of "
                                                           "its alignment {}",
                                                           *b.offset, b.name, b.alignment)});
    }
    check_lifetime(kernel, b, sink);
    check_alias(b, earlier, all_names, sink);
    check_only_with(b, earlier, sink);
    earlier.emplace(b.name, &b);
  }
}

void check_smem_aliasing(const KernelDecl& kernel, const SmemLayout& layout, std::vector<Diagnostic>& sink) {
  const auto& buffers = layout.buffers;
  for (std::size_t j = 0; j < buffers.size(); ++j) {
    const PlacedBuffer& b = buffers[j];
    for (std::size_t i = 0; i < j; ++i) {
      const PlacedBuffer& a = buffers[i];
      if (a.region != b.region || a.bytes == 0 || b.bytes == 0) {
        continue;
      }
      const std::int64_t lo = std::max(a.offset, b.offset);
      const std::int64_t hi = std::min(a.end(), b.end());
      if (lo >= hi) {
        continue;
      }
      const bool both_live = a.first_phase < b.last_phase && b.first_phase < a.last_phase;
      if (both_live) {
        const int phase = std::max(a.first_phase, b.first_phase);
        sink.push_back({b.json_path, fmt::format("'{}' overlaps live buffer '{}' in phase '{}' (bytes {}..{})", b.name,
                                                 a.name, phase_name(kernel, phase), lo,
                                                 hi - 1)});
      } else if (a.alias_group != b.alias_group) {
        sink.push_back({b.json_path, fmt::format("'{}' overlaps buffer '{}' (bytes {}..{}) without declaring an alias "
                                                 "of it",
                                                 b.name, a.name, lo, hi - 1)});
      }
    }
  }
}

void check_blocks_per_sm(const KernelDecl& kernel, const SmemLayout& layout, const Target& target,
                         std::vector<Diagnostic>& sink) {
  const int n = kernel.min_blocks_per_sm;
  if (n == 0) {
    return;
  }
  const std::string path = kernel.json_path + "/min_blocks_per_sm";
  if (n < 1 || n > 32) {
    sink.push_back({path, fmt::format("{} blocks per SM is outside 1..32", n)});
    return;
  }
  // The driver reserves 1 KB of shared memory per resident block (sm_80 and later).
  const std::int64_t per_block = layout.total_bytes + k_reserved_smem_per_block;
  if (per_block * n > target.smem_per_sm) {
    sink.push_back({path, fmt::format("{} blocks of {} B SMEM (+ {} B reserved each) need {} B, more than {}'s {} B "
                                      "per SM",
                                      n, with_thousands(layout.total_bytes), with_thousands(k_reserved_smem_per_block),
                                      with_thousands(per_block * n), target.name,
                                      with_thousands(target.smem_per_sm))});
  }
  if (kernel.threads() * n > target.max_threads_per_sm) {
    sink.push_back({path, fmt::format("{} blocks of {} threads exceed {}'s {} threads per SM", n, kernel.threads(),
                                      target.name, with_thousands(target.max_threads_per_sm))});
  }
}

void check_smem_budget(const KernelDecl& kernel, const SmemLayout& layout, const Target& target,
                       std::vector<Diagnostic>& sink) {
  check_blocks_per_sm(kernel, layout, target, sink);
  if (layout.total_bytes <= target.max_smem_per_block) {
    return;
  }
  sink.push_back({kernel.json_path + "/smem",
                  fmt::format("total SMEM {} B exceeds {}'s limit of {} B by {} B ({} stage{} x {} B + shared {} B + "
                              "base alignment {} B)",
                              with_thousands(layout.total_bytes), target.name,
                              with_thousands(target.max_smem_per_block),
                              with_thousands(layout.total_bytes - target.max_smem_per_block), layout.stages,
                              layout.stages == 1 ? "" : "s", with_thousands(layout.stage_bytes),
                              with_thousands(layout.shared_bytes + (layout.shared_offset - layout.ring_bytes)),
                              with_thousands(layout.alignment_slack))});
}

} // namespace kda
