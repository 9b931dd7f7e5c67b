/// \file
/// The compilation targets kdajit knows: per target its SMEM limit per block,
/// its TMEM, and the kernel families allowed on it (architecture.md, "Targets").
#pragma once

#include "compiler/schedule_enums.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kda {

/// A PTX ISA version (`.version 8.7`).
struct PtxVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const PtxVersion&) const = default;
};

/// Plain `sm_XY`, architecture-specific `sm_XYa`, or family `sm_XYf`.
enum class ArchVariant { plain, arch_specific, family };

struct Target {
  std::string name;                 ///< the literal NVRTC arch string, e.g. "sm_100f"
  int cc_major = 0;
  int cc_minor = 0;
  ArchVariant variant = ArchVariant::plain;
  std::int64_t max_smem_per_block = 0; ///< static + dynamic, with opt-in
  int tmem_columns = 0;                ///< 0: no tensor memory
  int tmem_lanes = 0;
  std::vector<Family> families;        ///< families whose instructions compile here
  std::int64_t smem_per_sm = 0;        ///< shared memory of one SM (blocks share it)
  int max_threads_per_sm = 0;
  /// The NVRTC architecture when it differs from `name` (the proxy targets).
  std::string nvrtc_arch;
  /// An sm_90a stand-in for the tcgen05 targets (issue 5, item 3): a tcgen05
  /// schedule lowers here with TMEM and tcgen05.mma replaced (tcgen05/proxy_ops)
  /// so that the rest of its kernel runs on Hopper. Never chosen by the router.
  bool tcgen05_proxy = false;
  /// A stand-in that builds another target's plans unchanged: the sm_120a
  /// proxy lowers a schedule listing sm_120a under sm_120a's SMEM limits and
  /// compiles it for sm_90a (its kernels use only mma.sync, ldmatrix,
  /// cp.async and TMA, all present there), so that it runs on Hopper. Never
  /// chosen by the router.
  std::string proxy_of;
  /// Kernels built for this target ran and were verified on real hardware of
  /// it (the H200: sm_90, sm_90a and both proxies). Routing takes a schedule
  /// on any other target only after it passed `kdajit selftest` on the device.
  bool verified_on_hardware = false;
  /// The lowest PTX ISA version ptxas accepts for arch() (probed with ptxas
  /// 13.0): PTX retargeted here (compiler/ptx/ptx_retarget.hpp) gets at least it.
  PtxVersion lowest_ptx_version;

  bool allows(Family family) const;
  /// The string passed to NVRTC's -arch.
  const std::string& arch() const { return nvrtc_arch.empty() ? name : nvrtc_arch; }
};

/// Every known target, in a fixed order (sm_80 first).
std::span<const Target> all_targets();

/// The target named `name`, or nothing.
std::optional<Target> find_target(std::string_view name);

/// "sm_80, sm_90, ..." for messages.
std::string known_target_names();

} // namespace kda
