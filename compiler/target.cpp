#include "compiler/target.hpp"

#include <algorithm>

namespace kda {
namespace {

// Numbers from architecture.md ("Targets and what can be verified here"). The
// SMEM figure is the opt-in maximum per block (cudaDevAttrMaxSharedMemoryPerBlockOptin);
// per SM: the CUDA C Programming Guide's compute-capability table (228 KB on
// 9.0 / 10.x, 164 KB on 8.0, 100 KB on 12.0; 2,048 threads, 1,536 on 12.0).
const std::vector<Target>& target_table() {
  static const std::vector<Target> k_targets = {
      {"sm_80", 8, 0, ArchVariant::plain, 166'912, 0, 0, {Family::warp_mma}, 167'936, 2048, "", false},
      {"sm_90", 9, 0, ArchVariant::plain, 232'448, 0, 0, {Family::warp_mma}, 233'472, 2048, "", false},
      {"sm_90a", 9, 0, ArchVariant::arch_specific, 232'448, 0, 0, {Family::warp_mma, Family::wgmma}, 233'472, 2048, "", false},
      {"sm_100a", 10, 0, ArchVariant::arch_specific, 232'448, 512, 128, {Family::warp_mma, Family::tcgen05}, 233'472,
       2048, "", false},
      {"sm_100f", 10, 0, ArchVariant::family, 232'448, 512, 128, {Family::warp_mma, Family::tcgen05}, 233'472, 2048, "", false},
      {"sm_103a", 10, 3, ArchVariant::arch_specific, 232'448, 512, 128, {Family::warp_mma, Family::tcgen05}, 233'472,
       2048, "", false},
      {"sm_120a", 12, 0, ArchVariant::arch_specific, 101'376, 0, 0, {Family::warp_mma}, 102'400, 1536, "", false},
      // Plain sm_120: its cubins run on every CC 12.x device (12.0 and 12.1,
      // the latter without a target of its own here), NVRTC 12.8 builds it.
      {"sm_120", 12, 0, ArchVariant::plain, 101'376, 0, 0, {Family::warp_mma}, 102'400, 1536, "", false},
      // The sm_90a proxy of the tcgen05 targets: Hopper's SMEM, TMEM emulated
      // as a per-CTA image in global memory (512 columns x 128 lanes).
      {"sm_90a_proxy", 9, 0, ArchVariant::arch_specific, 232'448, 512, 128, {Family::tcgen05}, 233'472, 2048, "sm_90a",
       true},
  };
  return k_targets;
}

} // namespace

bool Target::allows(Family family) const {
  return std::find(families.begin(), families.end(), family) != families.end();
}

std::span<const Target> all_targets() {
  return target_table();
}

std::optional<Target> find_target(std::string_view name) {
  for (const Target& t : target_table()) {
    if (t.name == name) {
      return t;
    }
  }
  return std::nullopt;
}

std::string known_target_names() {
  std::string out;
  for (const Target& t : target_table()) {
    out += out.empty() ? t.name : ", " + t.name;
  }
  return out;
}

} // namespace kda
