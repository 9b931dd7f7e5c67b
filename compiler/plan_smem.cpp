#include "compiler/plan_smem.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace kda {
namespace {

std::int64_t align_up(std::int64_t value, std::int64_t alignment) {
  return alignment <= 1 ? value : (value + alignment - 1) / alignment * alignment;
}

bool is_power_of_two(std::int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

PlacedBuffer describe(const KernelDecl& kernel, const BufferDecl& decl) {
  PlacedBuffer p;
  p.name = decl.name;
  p.region = decl.region;
  // bounded (check_buffer_decls reports larger ones), so no sum below overflows
  p.bytes = std::clamp<std::int64_t>(decl.bytes(), 0, k_max_buffer_bytes + 1);
  p.alignment = is_power_of_two(decl.alignment) ? decl.alignment : 16;
  const int first = kernel.phase_index(decl.lifetime.first);
  const int last = kernel.phase_index(decl.lifetime.last);
  p.first_phase = first < 0 ? 0 : first;
  p.last_phase = last < 0 ? static_cast<int>(kernel.phases.size()) : last;
  p.alias = decl.alias;
  p.pinned = decl.offset.has_value();
  p.json_path = decl.json_path;
  return p;
}

// Alias groups: union of the alias edges, numbered by first member.
void assign_alias_groups(std::vector<PlacedBuffer>& buffers) {
  std::vector<int> parent(buffers.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int i) {
    while (parent[i] != i) {
      i = parent[i] = parent[parent[i]];
    }
    return i;
  };
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    index.emplace(buffers[i].name, static_cast<int>(i));
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].alias) {
      auto it = index.find(*buffers[i].alias);
      if (it != index.end()) {
        parent[root(static_cast<int>(i))] = root(it->second);
      }
    }
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    buffers[i].alias_group = root(static_cast<int>(i));
  }
}

} // namespace

const PlacedBuffer* SmemLayout::find(const std::string& name) const {
  for (const PlacedBuffer& b : buffers) {
    if (b.name == name) {
      return &b;
    }
  }
  return nullptr;
}

SmemLayout plan_smem(const KernelDecl& kernel, bool with_checkpoints) {
  SmemLayout layout;
  layout.stages = std::clamp(kernel.pipeline.stages, 1, 1 << 10); // check_pipeline reports more than 16
  std::map<std::string, std::size_t> placed; // name -> index in layout.buffers
  std::int64_t cursor[2] = {0, 0};           // per region: first byte past everything placed
  std::int64_t region_alignment[2] = {16, 16};

  for (const BufferDecl& decl : kernel.smem.buffers) {
    PlacedBuffer p = describe(kernel, decl);
    if (decl.only_with && !(with_checkpoints && *decl.only_with == k_checkpoints_feature)) {
      p.present = false;
      p.bytes = 0;
      placed.emplace(p.name, layout.buffers.size());
      layout.buffers.push_back(std::move(p));
      continue;
    }
    const int r = static_cast<int>(p.region);
    const PlacedBuffer* target = nullptr;
    if (p.alias) {
      auto it = placed.find(*p.alias);
      if (it != placed.end() && layout.buffers[it->second].region == p.region && layout.buffers[it->second].present) {
        target = &layout.buffers[it->second];
      }
    }
    if (decl.offset) {
      p.offset = std::clamp<std::int64_t>(*decl.offset, 0, k_max_pinned_offset + 1);
    } else if (target != nullptr) {
      p.offset = target->offset;
    } else {
      p.offset = align_up(cursor[r], p.alignment);
    }
    cursor[r] = std::max(cursor[r], p.end());
    region_alignment[r] = std::max(region_alignment[r], p.alignment);
    placed.emplace(p.name, layout.buffers.size());
    layout.buffers.push_back(std::move(p));
  }
  assign_alias_groups(layout.buffers);

  const int stage = static_cast<int>(Region::stage);
  const int shared = static_cast<int>(Region::shared);
  layout.stage_used_bytes = cursor[stage];
  layout.stage_alignment = region_alignment[stage];
  layout.stage_bytes = align_up(cursor[stage], region_alignment[stage]);
  layout.ring_bytes = layout.stage_bytes * layout.stages;
  layout.shared_offset = align_up(layout.ring_bytes, region_alignment[shared]);
  layout.shared_bytes = cursor[shared];
  layout.base_alignment = std::max(region_alignment[stage], region_alignment[shared]);
  layout.alignment_slack = std::max<std::int64_t>(0, layout.base_alignment - k_dynamic_smem_base_alignment);
  layout.total_bytes = layout.shared_offset + layout.shared_bytes + layout.alignment_slack;
  return layout;
}

} // namespace kda
