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
      {.name = "sm_80", .cc_major = 8, .cc_minor = 0, .variant = ArchVariant::plain,
       .max_smem_per_block = 166'912, .families = {Family::warp_mma, Family::token}, .smem_per_sm = 167'936,
       .max_threads_per_sm = 2048, .lowest_ptx_version = {7, 0}},
      {.name = "sm_90", .cc_major = 9, .cc_minor = 0, .variant = ArchVariant::plain,
       .max_smem_per_block = 232'448, .families = {Family::warp_mma, Family::token}, .smem_per_sm = 233'472,
       .max_threads_per_sm = 2048, .verified_on_hardware = true, .lowest_ptx_version = {7, 8}},
      {.name = "sm_90a", .cc_major = 9, .cc_minor = 0, .variant = ArchVariant::arch_specific,
       .max_smem_per_block = 232'448, .families = {Family::warp_mma, Family::wgmma, Family::token}, .smem_per_sm = 233'472,
       .max_threads_per_sm = 2048, .verified_on_hardware = true, .lowest_ptx_version = {8, 0}},
      {.name = "sm_100a", .cc_major = 10, .cc_minor = 0, .variant = ArchVariant::arch_specific,
       .max_smem_per_block = 232'448, .tmem_columns = 512, .tmem_lanes = 128,
       .families = {Family::warp_mma, Family::tcgen05, Family::token}, .smem_per_sm = 233'472, .max_threads_per_sm = 2048,
       .lowest_ptx_version = {8, 6}},
      {.name = "sm_100f", .cc_major = 10, .cc_minor = 0, .variant = ArchVariant::family,
       .max_smem_per_block = 232'448, .tmem_columns = 512, .tmem_lanes = 128,
       .families = {Family::warp_mma, Family::tcgen05, Family::token}, .smem_per_sm = 233'472, .max_threads_per_sm = 2048,
       .lowest_ptx_version = {8, 8}},
      {.name = "sm_103a", .cc_major = 10, .cc_minor = 3, .variant = ArchVariant::arch_specific,
       .max_smem_per_block = 232'448, .tmem_columns = 512, .tmem_lanes = 128,
       .families = {Family::warp_mma, Family::tcgen05, Family::token}, .smem_per_sm = 233'472, .max_threads_per_sm = 2048,
       .lowest_ptx_version = {8, 8}},
      {.name = "sm_120a", .cc_major = 12, .cc_minor = 0, .variant = ArchVariant::arch_specific,
       .max_smem_per_block = 101'376, .families = {Family::warp_mma, Family::token}, .smem_per_sm = 102'400,
       .max_threads_per_sm = 1536, .lowest_ptx_version = {8, 7}},
      // Plain sm_120: its cubins run on every CC 12.x device (12.0 and 12.1,
      // the latter without a target of its own here), NVRTC 12.8 builds it.
      {.name = "sm_120", .cc_major = 12, .cc_minor = 0, .variant = ArchVariant::plain,
       .max_smem_per_block = 101'376, .families = {Family::warp_mma, Family::token}, .smem_per_sm = 102'400,
       .max_threads_per_sm = 1536, .lowest_ptx_version = {8, 7}},
      // The sm_90a proxy of the tcgen05 targets: Hopper's SMEM, TMEM emulated
      // as a per-CTA image in global memory (512 columns x 128 lanes).
      {.name = "sm_90a_proxy", .cc_major = 9, .cc_minor = 0, .variant = ArchVariant::arch_specific,
       .max_smem_per_block = 232'448, .tmem_columns = 512, .tmem_lanes = 128, .families = {Family::tcgen05},
       .smem_per_sm = 233'472, .max_threads_per_sm = 2048, .nvrtc_arch = "sm_90a", .tcgen05_proxy = true,
       .verified_on_hardware = true, .lowest_ptx_version = {8, 0}},
      // The sm_90a proxy of sm_120a: an sm_120a plan as it is (SM120's SMEM
      // per block and per SM, its 1,536 threads per SM for the occupancy
      // figures), compiled for sm_90a so that it runs on Hopper.
      {.name = "sm_120a_proxy", .cc_major = 9, .cc_minor = 0, .variant = ArchVariant::arch_specific,
       .max_smem_per_block = 101'376, .families = {Family::warp_mma}, .smem_per_sm = 102'400,
       .max_threads_per_sm = 1536, .nvrtc_arch = "sm_90a", .proxy_of = "sm_120a", .verified_on_hardware = true,
       .lowest_ptx_version = {8, 0}},
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
