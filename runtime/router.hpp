/// \file
/// Which schedule and target run a call on a device (architecture.md,
/// "Target choice"): for each shipped schedule, the target rule gives the
/// architecture-specific or family target for the device's CC when the
/// schedule lists one, else the highest plain target of the same major that is
/// not newer than the device; then the call's eligibility (layout, state dtype,
/// heads, state pool, seq_order, checkpoints and their interval, a generator
/// for the family) decides. Every decision carries its
/// explanation. Never keyed by device name.
#pragma once

#include "compiler/schedule.hpp"
#include "compiler/shape_key.hpp"
#include "compiler/target.hpp"
#include "runtime/check_args.hpp"
#include "runtime/tuning_table.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kda {

struct DeviceDescription {
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int nvrtc_major = 13; ///< the NVRTC in use decides whether family targets exist
  int nvrtc_minor = 0;
};

struct TargetChoice {
  std::optional<Target> target;
  std::string reason; ///< why this target, or why none
};

/// The target rule for one schedule on one device.
TargetChoice choose_target(const Schedule& schedule, const DeviceDescription& device);

/// Whether a schedule of a family that never ran on real hardware of this
/// target (verified_on_hardware false) has passed `kdajit selftest` on this
/// device in this environment (the caller matches the records: device,
/// driver, NVRTC, kdajit version, the schedule's source hash).
using SelftestTrust = std::function<bool(const Schedule&, const Target&)>;

/// Whether the schedule's kernels ran and were verified on real hardware: its
/// target, or another target it lists, is one kdajit ran (sm_90, sm_90a and
/// the two sm_90a proxies, on the H200), so the same source ran. Not so for
/// schedules listing only targets never run here: the tcgen05 designs
/// (sm_100a/f, sm_103a) and the SM120 designs (sm_120a, sm_120), compiled in
/// CI and run only through a proxy (which lends them no trust). Routing takes
/// those automatically only after they passed `kdajit selftest` on the device.
bool verified_on_hardware(const Schedule& schedule, const Target& target);

struct RouteRequest {
  std::optional<std::string> schedule = std::nullopt; ///< an explicit schedule: refused with the reason if ineligible
  std::optional<Family> family = std::nullopt; ///< only this family's schedules: refused with the reasons if none is eligible
  const TuningTable* tuning = nullptr; ///< measured choices (kdajit tune); nullptr: the static preference
  std::optional<std::string> target = std::nullopt; ///< an explicit target (needs `schedule`): see explicit_target
  /// Passed selftests on this device; empty: none has (every schedule that is
  /// not verified_on_hardware stays last, and a table entry naming one is
  /// ignored, unless `family` asks for its family: an explicit opt-in).
  SelftestTrust selftest_passed = nullptr;
};

/// An explicitly requested target for one schedule on one device: known,
/// listed by the schedule (or the tcgen05 proxy of a tcgen05 schedule), and
/// runnable there (same CC major, the exact CC for an architecture-specific
/// target); otherwise no target and the reason.
TargetChoice explicit_target(const Schedule& schedule, const std::string& name, const DeviceDescription& device);

/// Where a route's choice came from.
enum class RouteSource {
  requested,         ///< an explicit schedule
  measured_table,    ///< the tuning table's entry for the device
  borrowed_table,    ///< the entry of a measured device of the same CC (nearest SM count)
  static_preference, ///< no table entry for the CC: the documented order
};

struct RouteDecision {
  const Schedule* schedule = nullptr;
  Target target;
  ShapeKey shape;
  RouteSource source = RouteSource::static_preference;
  std::string explanation; ///< one line per schedule considered
  /// The SM-count table's line where it decided between a fused and a
  /// decomposed design (its fallback labelled as such); empty elsewhere.
  std::string decomposition_table;
};

/// Chooses among `schedules` (normally the shipped ones): an explicit request;
/// else the tuning table's schedule for (device, shape class) when it is
/// eligible; else, for a device the table does not list, the entry of the
/// measured device of the same CC with the nearest SM count, the shape class
/// taken from the device's own SM count ("borrowed"); else the static
/// preference: the tensor-core families of the device (wgmma; tcgen05 once it
/// passed `kdajit selftest` here) before warp_mma, a schedule never run on
/// this hardware and not self-tested last; within a rank the decomposition
/// the SM-count table (TuningTable::decomposition_rule) asks for, a design
/// made for the device's generation before a portable one, the larger chunk,
/// then the name. A table entry naming a schedule that is neither verified on hardware
/// nor self-tested here is not taken. Never the first schedule by name.
/// Throws TensorError (argument "schedule") when nothing is eligible or an
/// explicit request is not.
RouteDecision route(const std::vector<Schedule>& schedules, const DeviceDescription& device,
                    const ProblemShape& problem, const RouteRequest& request);

/// Why `schedule` cannot run `problem` (empty when it can), for a chosen target.
std::string ineligibility(const Schedule& schedule, const Target& target, const ProblemShape& problem);

} // namespace kda
