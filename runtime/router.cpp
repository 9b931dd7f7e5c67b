#include "runtime/router.hpp"

#include "compiler/errors.hpp"
#include "compiler/exponent_range.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/validated_schedule.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <tuple>

namespace kda {
namespace {

bool lists(const Schedule& s, const std::string& target) {
  return std::find(s.targets.begin(), s.targets.end(), target) != s.targets.end();
}

// Architecture-specific or family targets for a CC, in preference order.
std::vector<std::string> specific_targets(const DeviceDescription& d) {
  const bool family_ok = d.nvrtc_major > 12 || (d.nvrtc_major == 12 && d.nvrtc_minor >= 9);
  if (d.cc_major == 9 && d.cc_minor == 0) {
    return {"sm_90a"};
  }
  if (d.cc_major == 10 && d.cc_minor == 0) {
    return family_ok ? std::vector<std::string>{"sm_100f", "sm_100a"} : std::vector<std::string>{"sm_100a"};
  }
  if (d.cc_major == 10 && d.cc_minor == 3) {
    return family_ok ? std::vector<std::string>{"sm_100f", "sm_103a"} : std::vector<std::string>{"sm_103a"};
  }
  if (d.cc_major == 12 && d.cc_minor == 0) {
    return {"sm_120a"};
  }
  return {};
}

// Whether routing may take `s` on `t`: verified on real hardware of the
// target, asked for (a family request is an explicit opt-in), or passed
// `kdajit selftest` on this device.
bool trusted(const Schedule& s, const Target& t, const RouteRequest& request) {
  return verified_on_hardware(s, t) || request.family.has_value() ||
         (request.selftest_passed && request.selftest_passed(s, t));
}

// Whether every target a schedule lists is of the device's CC major: a design
// made for this generation (wgmma for 9.x, tcgen05 for 10.x, the SM120
// designs for 12.x), not one portable across generations.
bool native_design(const Schedule& s, const DeviceDescription& d) {
  return std::all_of(s.targets.begin(), s.targets.end(), [&](const std::string& name) {
    const std::optional<Target> t = find_target(name);
    return t && t->cc_major == d.cc_major;
  });
}

// The static preference among eligible schedules, where no measured table
// speaks for the device's CC (docs/runtime.md, "Routing"): the device's
// tensor-core families first (wgmma; tcgen05 once trusted), warp-level
// mma.sync next; a schedule never run on this hardware and not self-tested
// here last; within a rank the decomposition the SM-count table asks for
// (where it speaks for the CC), a design made for the device's generation
// before a portable one, the larger chunk (half the serial steps), then the name.
std::tuple<int, int, int, int, std::string_view> static_preference(const Schedule& s, const Target& t,
                                                                   const DeviceDescription& d,
                                                                   std::optional<Decomposition> wanted,
                                                                   const RouteRequest& request) {
  const int family = !trusted(s, t, request) ? 2 : s.family == Family::warp_mma ? 1 : 0;
  const int decomposition = wanted && s.decomposition != *wanted ? 1 : 0;
  return {family, decomposition, native_design(s, d) ? 0 : 1, -s.chunk_size, s.name};
}

// The SM-count table's decomposition for the call (nothing where no entry
// speaks for the device's CC major), with the explanation line.
std::optional<Decomposition> table_decomposition(const TuningTable* table, const DeviceDescription& d,
                                                 const ProblemShape& p, std::string& line) {
  const std::optional<DecompositionRule> rule =
      table != nullptr ? table->decomposition_rule(d.cc_major, d.cc_minor, d.sm_count) : std::nullopt;
  if (!rule) {
    return std::nullopt;
  }
  const std::int64_t pairs = static_cast<std::int64_t>(p.num_seqs) * p.heads;
  const bool fused = pairs >= rule->fused_min_pairs;
  line = fmt::format("SM-count table ({}): N x H = {} {} {}: the {} design", rule->label(d.sm_count, d.cc_major, d.cc_minor),
                     pairs, fused ? ">=" : "<", rule->fused_min_pairs, fused ? "fused" : "decomposed");
  return fused ? Decomposition::fused : Decomposition::decomposed;
}

// The measured table's device key to use for `device`: its own when the table
// has an entry for it and the class, else the device of the same CC with the
// nearest SM count that has one (the class is the device's own, from its SM
// count). Nothing when no device of its CC was measured.
std::optional<std::string> table_device_key(const TuningTable& table, const DeviceDescription& device, ShapeClass cls,
                                            bool& borrowed) {
  const std::string own = tuning_device_key(device.cc_major, device.cc_minor, device.sm_count);
  borrowed = false;
  if (table.lookup(own, cls)) {
    return own;
  }
  std::optional<std::string> nearest;
  int nearest_distance = 0;
  for (const auto& [key, sm_count] : table.devices_of_cc(device.cc_major, device.cc_minor)) {
    const int distance = std::abs(sm_count - device.sm_count);
    if (table.lookup(key, cls) && (!nearest || distance < nearest_distance)) {
      nearest = key;
      nearest_distance = distance;
    }
  }
  borrowed = nearest.has_value();
  return nearest;
}

} // namespace

bool verified_on_hardware(const Schedule& s, const Target& t) {
  if (!s.shipped || !s.hardware_verified) {
    // an author's schedule (KDAJIT_SCHEDULE_PATH), or a shipped design no GPU
    // has run yet (`hardware_verified`: false), whatever it lists
    return false;
  }
  // the target itself ran (compiler/target.cpp: sm_90, sm_90a, the proxies),
  // or the same source ran for another target the schedule lists (portable_c16
  // on sm_100f is the sm_90 kernel's source; a proxy lends nobody its trust)
  return t.verified_on_hardware || std::any_of(s.targets.begin(), s.targets.end(), [](const std::string& name) {
           const std::optional<Target> listed = find_target(name);
           return listed && listed->verified_on_hardware;
         });
}

TargetChoice choose_target(const Schedule& s, const DeviceDescription& d) {
  for (const std::string& name : specific_targets(d)) {
    if (lists(s, name)) {
      return {find_target(name), fmt::format("{} is the schedule's architecture-specific or family target for CC {}.{}",
                                             name, d.cc_major, d.cc_minor)};
    }
  }
  std::optional<Target> best;
  for (const std::string& name : s.targets) {
    const std::optional<Target> t = find_target(name);
    if (t && t->variant == ArchVariant::plain && t->cc_major == d.cc_major && t->cc_minor <= d.cc_minor &&
        (!best || t->cc_minor > best->cc_minor)) {
      best = t;
    }
  }
  if (best) {
    return {best, fmt::format("{} is the highest plain target of CC {}.x not newer than {}.{}", best->name, d.cc_major,
                              d.cc_major, d.cc_minor)};
  }
  return {std::nullopt, fmt::format("no target for CC {}.{} (it lists {})", d.cc_major, d.cc_minor,
                                    fmt::join(s.targets, ", "))};
}

TargetChoice explicit_target(const Schedule& s, const std::string& name, const DeviceDescription& d) {
  const std::optional<Target> t = find_target(name);
  if (!t) {
    return {std::nullopt, fmt::format("unknown target '{}' (known: {})", name, known_target_names())};
  }
  const bool proxy_for_it =
      (t->tcgen05_proxy && s.family == Family::tcgen05) || (!t->proxy_of.empty() && lists(s, t->proxy_of));
  if (!lists(s, name) && !proxy_for_it) {
    return {std::nullopt, fmt::format("the schedule does not list target {} (it lists {})", name,
                                      fmt::join(s.targets, ", "))};
  }
  const bool runs = t->cc_major == d.cc_major &&
                    (t->variant == ArchVariant::arch_specific ? t->cc_minor == d.cc_minor : t->cc_minor <= d.cc_minor);
  if (!runs) {
    return {std::nullopt, fmt::format("target {} (CC {}.{}) does not run on CC {}.{}", name, t->cc_major, t->cc_minor,
                                      d.cc_major, d.cc_minor)};
  }
  if (!proxy_for_it) {
    return {t, fmt::format("{} was requested", name)};
  }
  return {t, t->tcgen05_proxy
                 ? fmt::format("{} was requested: the sm_90a proxy of the schedule's tcgen05 kernel", name)
                 : fmt::format("{} was requested: the schedule's {} plan compiled for {}", name, t->proxy_of, t->arch())};
}

std::string ineligibility(const Schedule& s, const Target& target, const ProblemShape& p) {
  const Eligibility& e = s.eligibility;
  if (std::find(e.layouts.begin(), e.layouts.end(), p.layout) == e.layouts.end()) {
    return fmt::format("layout '{}' is not supported", to_string(p.layout));
  }
  if ((p.state_in || p.state_out) &&
      std::find(e.state_dtypes.begin(), e.state_dtypes.end(), p.state_dtype) == e.state_dtypes.end()) {
    return fmt::format("state dtype '{}' is not supported", to_string(p.state_dtype));
  }
  if (p.heads < e.min_heads || (e.max_heads && p.heads > *e.max_heads)) {
    return fmt::format("{} heads is outside its head range", p.heads);
  }
  if (p.state_pool && !e.state_pool) {
    return "state pools (ssm_state_indices) are not supported";
  }
  if (p.seq_order && !e.seq_order) {
    return "seq_order is not supported";
  }
  if (p.checkpoint_interval > 0 && !e.checkpoints) {
    return "native checkpoints are not supported";
  }
  if (p.checkpoint_interval > 0 && p.checkpoint_interval % s.chunk_size != 0) {
    return fmt::format("checkpoint interval {} is not a multiple of its chunk size {}", p.checkpoint_interval,
                       s.chunk_size);
  }
  if (p.lower_bound) {
    const double safe = safe_lower_bound_magnitude(s.chunk_size, s.exponent_anchor);
    const double lb = *p.lower_bound;
    if (!(lb >= e.lower_bound.min && lb < e.lower_bound.max && std::fabs(lb) < safe)) {
      return fmt::format("lower_bound {} is outside its range [{}, {}) with |lower_bound| < {:.4f}", lb,
                         e.lower_bound.min, e.lower_bound.max, safe);
    }
  }
  try {
    find_family_recipe(s);
    validate(s, target);
  } catch (const ScheduleError& error) {
    return error.diagnostics().empty() ? "invalid" : error.diagnostics().front().message;
  }
  return "";
}

RouteDecision route(const std::vector<Schedule>& schedules, const DeviceDescription& device, const ProblemShape& p,
                    const RouteRequest& request) {
  if (request.target && !request.schedule) {
    throw TensorError("target", "an explicit target needs an explicit schedule");
  }
  RouteDecision decision;
  std::string explanation;
  std::string table_line; // the SM-count table's choice, where it speaks for the CC
  const std::optional<Decomposition> wanted =
      request.schedule ? std::nullopt : table_decomposition(request.tuning, device, p, table_line);
  bool excluded_by_lower_bound = false; // some schedule had a target and failed only on lower_bound
  for (const Schedule& s : schedules) {
    if (request.schedule && s.name != *request.schedule) {
      continue;
    }
    if (request.family && s.family != *request.family) {
      continue;
    }
    if (s.family == Family::token && !request.family && !request.schedule) {
      // the LLVM tier's baseline answers only when asked (family token, the
      // schedule by name, or the tiered JIT's first calls): it never wins a
      // route by being eligible
      explanation += fmt::format("{}: not routed by itself (the LLVM tier's baseline: family 'token' or "
                                 "PrefillOptions::tiered)\n",
                                 s.name);
      continue;
    }
    const TargetChoice choice =
        request.target ? explicit_target(s, *request.target, device) : choose_target(s, device);
    std::string why;
    if (!choice.target) {
      why = choice.reason;
    } else {
      why = ineligibility(s, *choice.target, p);
    }
    if (!why.empty()) {
      excluded_by_lower_bound = excluded_by_lower_bound || why.starts_with("lower_bound ");
      explanation += fmt::format("{}: not eligible: {}\n", s.name, why);
      continue;
    }
    const bool hardware = verified_on_hardware(s, *choice.target) || request.family.has_value();
    explanation += fmt::format("{}: eligible on {} ({}{})\n", s.name, choice.target->name, choice.reason,
                               hardware                 ? ""
                               : trusted(s, *choice.target, request) ? "; never run on such hardware before, passed kdajit "
                                                                        "selftest on this device"
                                                                      : "; never run on such hardware and not self-tested "
                                                                        "here (kdajit selftest): ranked last");
    if (decision.schedule == nullptr ||
        static_preference(s, *choice.target, device, wanted, request) <
            static_preference(*decision.schedule, decision.target, device, wanted, request)) {
      decision.schedule = &s;
      decision.target = *choice.target;
    }
  }
  if (request.schedule && explanation.empty()) {
    throw TensorError("schedule", fmt::format("no shipped schedule is named '{}'", *request.schedule));
  }
  if (decision.schedule == nullptr && excluded_by_lower_bound) {
    throw TensorError("lower_bound", fmt::format("{} is outside the range every schedule for CC {}.{} makes safe in "
                                                 "BF16:\n{}",
                                                 *p.lower_bound, device.cc_major, device.cc_minor, explanation));
  }
  if (decision.schedule == nullptr && request.family) {
    throw TensorError("family", fmt::format("no eligible {} schedule for CC {}.{}:\n{}", to_string(*request.family),
                                            device.cc_major, device.cc_minor,
                                            explanation.empty() ? "(no shipped schedule of that family)\n" : explanation));
  }
  if (decision.schedule == nullptr) {
    throw TensorError("schedule", fmt::format("no eligible schedule for CC {}.{}:\n{}", device.cc_major, device.cc_minor,
                                              explanation));
  }
  if (wanted) {
    const bool kept = decision.schedule->decomposition == *wanted;
    explanation += table_line + (kept ? std::string("\n")
                                      : fmt::format("; no {} schedule is eligible and trusted here, a {} one runs\n", to_string(*wanted),
                                                    to_string(decision.schedule->decomposition)));
    decision.decomposition_table = table_line;
  }
  const ShapeClass call_class = shape_class(static_cast<std::int64_t>(p.num_seqs) * p.heads, device.sm_count,
                                           average_tokens(p.total_tokens, p.num_seqs));
  const std::string own_key = tuning_device_key(device.cc_major, device.cc_minor, device.sm_count);
  const std::string preferred = fmt::format("static preference: {}", decision.schedule->name);
  bool borrowed = false;
  ShapeClass cls = call_class;
  std::optional<std::string> device_key =
      request.tuning != nullptr ? table_device_key(*request.tuning, device, cls, borrowed) : std::nullopt;
  std::vector<std::string> missing; // classes tried without an entry, in order
  while (!device_key && request.tuning != nullptr && longer_sequence_class(cls) != cls) {
    // no entry measured for this tier on the device's CC: the same fill's
    // entry for longer sequences (tiny -> short -> long), labelled
    missing.emplace_back(to_string(cls));
    cls = longer_sequence_class(cls);
    device_key = table_device_key(*request.tuning, device, cls, borrowed);
  }
  const std::string class_label =
      cls == call_class ? std::string(to_string(cls))
                        : fmt::format("{} (no {} entry)", to_string(cls), fmt::join(missing, " or "));
  if (!request.schedule && device_key) {
    const std::string tuned = *request.tuning->lookup(*device_key, cls);
    const std::string source =
        borrowed ? fmt::format("tuning table (borrowed from {} for {}, class by its {} SMs)", *device_key, own_key,
                               device.sm_count)
                 : "tuning table";
    bool used = false;
    bool untrusted = false; // eligible, but never run on such hardware and not self-tested here
    for (const Schedule& s : schedules) {
      const bool wanted = s.name == tuned && (!request.family || s.family == *request.family);
      const TargetChoice choice = wanted ? choose_target(s, device) : TargetChoice{};
      if (choice.target && ineligibility(s, *choice.target, p).empty()) {
        if (!trusted(s, *choice.target, request)) {
          untrusted = true;
          continue;
        }
        decision.schedule = &s;
        decision.target = *choice.target;
        used = true;
      }
    }
    const Schedule* named = nullptr;
    for (const Schedule& s : schedules) {
      named = s.name == tuned ? &s : named;
    }
    const bool other_family = request.family && named != nullptr && named->family != *request.family;
    explanation += used ? fmt::format("{}: {} for {} / {}\n", source, tuned, *device_key, class_label)
                   : other_family
                       ? fmt::format("{} names {} for {} / {}, not a {} schedule; {}\n", source, tuned, *device_key,
                                     class_label, to_string(*request.family), preferred)
                   : untrusted
                       ? fmt::format("{} names {} for {} / {}, which has not passed kdajit selftest on this device; {}\n",
                                     source, tuned, *device_key, class_label, preferred)
                       : fmt::format("{} names {} for {} / {}, which is not eligible here; {}\n", source, tuned,
                                     *device_key, class_label, preferred);
    decision.source = used ? (borrowed ? RouteSource::borrowed_table : RouteSource::measured_table)
                           : RouteSource::static_preference;
  } else if (!request.schedule) {
    std::vector<std::string> longer; // the classes tried after the call's own
    for (ShapeClass c = call_class; longer_sequence_class(c) != c;) {
      c = longer_sequence_class(c);
      longer.emplace_back(to_string(c));
    }
    explanation += fmt::format("tuning table: no entry for CC {}.{} / {}{}; {}\n", device.cc_major, device.cc_minor,
                               to_string(call_class),
                               longer.empty() ? std::string() : fmt::format(" (nor {})", fmt::join(longer, ", ")),
                               preferred);
    decision.source = RouteSource::static_preference;
  } else {
    decision.source = RouteSource::requested;
  }
  decision.shape.state_dtype = p.state_dtype;
  decision.shape.layout = p.layout;
  decision.shape.checkpoints = p.checkpoint_interval > 0;
  decision.explanation = explanation + fmt::format("chosen: {} on {}", decision.schedule->name, decision.target.name);
  return decision;
}

} // namespace kda
