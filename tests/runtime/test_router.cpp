// The router on simulated devices (no GPU): the target rule of architecture.md
// ("Target choice") for the shipped schedules, and route() with its
// explanation and refusals.
#include "compiler/errors.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/validated_schedule.hpp"
#include "fake_args.hpp"
#include "runtime/router.hpp"
#include "runtime/tuning_table.hpp"
#include "compiler/schedule_fixtures.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace kda;
using Catch::Contains;

namespace {

DeviceDescription device(int cc_major, int cc_minor, int nvrtc_major = 13, int nvrtc_minor = 0) {
  DeviceDescription d;
  d.cc_major = cc_major;
  d.cc_minor = cc_minor;
  d.sm_count = 132;
  d.nvrtc_major = nvrtc_major;
  d.nvrtc_minor = nvrtc_minor;
  return d;
}

const Schedule& shipped(const std::string& name) {
  const Schedule* s = find_shipped_schedule(name);
  REQUIRE(s != nullptr);
  return *s;
}

std::string target_of(const Schedule& s, const DeviceDescription& d) {
  const TargetChoice c = choose_target(s, d);
  INFO(c.reason);
  return c.target ? c.target->name : "none";
}

Schedule with_targets(const std::string& shipped_name, const std::vector<std::string>& targets) {
  nlohmann::json doc = test::shipped_schedule_json(shipped_name);
  doc["name"] = shipped_name + "_retargeted";
  doc["targets"] = targets;
  return parse_schedule(doc, "retargeted.json");
}

ProblemShape problem(LayoutKind layout = LayoutKind::fixed, bool state = false,
                     StatePrecision dtype = StatePrecision::bf16, int heads = 4) {
  ProblemShape p;
  p.layout = layout;
  p.batch = layout == LayoutKind::fixed ? 2 : 1;
  p.seq_len = 64;
  p.total_tokens = p.batch * p.seq_len;
  p.heads = heads;
  p.num_seqs = 2;
  p.state_in = state;
  p.state_out = state;
  p.state_dtype = dtype;
  p.beta_token_stride = heads;
  return p;
}

std::string route_refusal(const std::vector<Schedule>& schedules, const DeviceDescription& d, const ProblemShape& p,
                          const RouteRequest& request = {}) {
  try {
    const RouteDecision r = route(schedules, d, p, request);
    return "routed to " + r.schedule->name;
  } catch (const TensorError& e) {
    CHECK(e.argument() == "schedule");
    return e.what();
  }
}

} // namespace

TEST_CASE("router: the shipped schedules are the ones these tests expect", "[runtime][router]") {
  std::vector<std::string> names;
  for (const Schedule& s : shipped_schedules()) {
    names.push_back(s.name);
  }
  CHECK(names == std::vector<std::string>{"portable_c16", "portable_c16_m64", "portable_c16_w8", "sm100_m128_c32", "sm100_m64_c32",
                                          "sm100_n16_c16", "sm120_c32", "sm120_decomposed_c16", "sm90_wgmma_c16",
                                          "sm90_wgmma_c16_fused", "sm90_wgmma_c16_m64", "sm90_wgmma_c16_persistent", "sm90_wgmma_c32",
                                          "sm90_wgmma_c32_persistent", "sm90_wgmma_c32_split", "token_llvm",
                                          "token_llvm_smem"});
  CHECK(shipped("portable_c16").targets ==
        std::vector<std::string>{"sm_80", "sm_90", "sm_100a", "sm_100f", "sm_103a", "sm_120a", "sm_120"});
}

TEST_CASE("router: target choice on CC 9.0", "[runtime][router]") {
  const DeviceDescription h200 = device(9, 0);
  const TargetChoice c = choose_target(shipped("portable_c16"), h200);
  REQUIRE(c.target);
  CHECK(c.target->name == "sm_90"); // the highest plain target of major 9, not newer than 9.0
  CHECK_THAT(c.reason, Contains("highest plain target"));
  for (const char* name : {"sm100_m128_c32", "sm100_m64_c32", "sm100_n16_c16", "sm120_c32"}) {
    INFO(name);
    const TargetChoice none = choose_target(shipped(name), h200);
    CHECK_FALSE(none.target);
    CHECK_THAT(none.reason, Contains("no target for CC 9.0"));
  }
  SECTION("a schedule listing sm_90a gets sm_90a") {
    const Schedule s = with_targets("portable_c16", {"sm_80", "sm_90", "sm_90a"});
    const TargetChoice a = choose_target(s, h200);
    REQUIRE(a.target);
    CHECK(a.target->name == "sm_90a");
    CHECK(a.target->variant == ArchVariant::arch_specific);
    CHECK_THAT(a.reason, Contains("architecture-specific or family target for CC 9.0"));
    CHECK(target_of(with_targets("portable_c16", {"sm_90a"}), h200) == "sm_90a");
  }
  SECTION("the minimal schedule (sm_90, sm_80) gets sm_90") {
    const Schedule s = parse_schedule(test::minimal_schedule_json(), "minimal.json");
    CHECK(target_of(s, h200) == "sm_90");
  }
}

TEST_CASE("router: target choice on CC 10.0 and 10.3 depends on NVRTC", "[runtime][router]") {
  for (const char* name : {"sm100_m128_c32", "sm100_m64_c32", "sm100_n16_c16"}) {
    INFO(name);
    const Schedule& s = shipped(name);
    CHECK(target_of(s, device(10, 0, 13, 0)) == "sm_100f");
    CHECK(target_of(s, device(10, 0, 12, 9)) == "sm_100f");
    CHECK(target_of(s, device(10, 0, 12, 8)) == "sm_100a");
    CHECK(target_of(s, device(10, 3, 13, 0)) == "sm_100f");
    CHECK(target_of(s, device(10, 3, 12, 9)) == "sm_100f");
    CHECK(target_of(s, device(10, 3, 12, 8)) == "sm_103a");
  }
  SECTION("a schedule without sm_100f falls back to sm_100a on CC 10.0, and not at all on CC 10.3") {
    const Schedule s = with_targets("sm100_n16_c16", {"sm_100a"});
    CHECK(target_of(s, device(10, 0, 13, 0)) == "sm_100a");
    CHECK(target_of(s, device(10, 3, 13, 0)) == "none");
  }
  SECTION("portable_c16 follows the same rule (it lists sm_100a, sm_100f and sm_103a)") {
    const Schedule& s = shipped("portable_c16");
    CHECK(target_of(s, device(10, 0, 13, 0)) == "sm_100f");
    CHECK(target_of(s, device(10, 0, 12, 8)) == "sm_100a");
    CHECK(target_of(s, device(10, 3, 13, 0)) == "sm_100f");
    CHECK(target_of(s, device(10, 3, 12, 8)) == "sm_103a");
  }
  SECTION("a schedule without a CC 10 target") {
    const TargetChoice c = choose_target(shipped("portable_c16_m64"), device(10, 0));
    CHECK_FALSE(c.target);
    CHECK_THAT(c.reason, Contains("no target for CC 10.0 (it lists sm_80, sm_90, sm_120a, sm_120)"));
  }
}

TEST_CASE("router: target choice on CC 12.0 and 8.x", "[runtime][router]") {
  CHECK(target_of(shipped("portable_c16"), device(12, 0)) == "sm_120a");
  CHECK(target_of(shipped("sm120_c32"), device(12, 0)) == "sm_120a");
  CHECK(target_of(shipped("sm100_m128_c32"), device(12, 0)) == "none");
  CHECK(target_of(shipped("portable_c16"), device(8, 0)) == "sm_80");
  CHECK(target_of(shipped("portable_c16"), device(8, 6)) == "sm_80");
  CHECK(target_of(shipped("portable_c16"), device(8, 9)) == "sm_80");
  CHECK(target_of(shipped("sm120_c32"), device(8, 6)) == "none");
  // CC 12.1 has no architecture-specific target here: the plain sm_120
  // build, whose cubins run on every CC 12.x device, with NVRTC 12.8 too
  CHECK(target_of(shipped("portable_c16"), device(12, 1)) == "sm_120");
  CHECK(target_of(shipped("portable_c16_m64"), device(12, 1)) == "sm_120");
  CHECK(target_of(shipped("sm120_c32"), device(12, 1)) == "sm_120");
  CHECK(target_of(shipped("portable_c16"), device(12, 1, 12, 8)) == "sm_120");
  CHECK(target_of(with_targets("portable_c16", {"sm_120a"}), device(12, 1)) == "none"); // 12.0's own only
  SECTION("CC 12.0 never falls back to a plain sm_80 or sm_90 target") {
    const Schedule s = parse_schedule(test::minimal_schedule_json(), "minimal.json"); // sm_90, sm_80
    const TargetChoice c = choose_target(s, device(12, 0));
    CHECK_FALSE(c.target);
    CHECK_THAT(c.reason, Contains("no target for CC 12.0"));
    CHECK(target_of(with_targets("portable_c16", {"sm_80", "sm_90"}), device(12, 0)) == "none");
  }
  SECTION("a device older than every target gets none") {
    CHECK(target_of(with_targets("portable_c16", {"sm_90"}), device(8, 6)) == "none");
  }
}

TEST_CASE("router: without a table CC 9.0 takes the static preference, the wgmma family at chunk 32",
          "[runtime][router]") {
  const RouteDecision r = route(shipped_schedules(), device(9, 0), problem(), {});
  REQUIRE(r.schedule != nullptr);
  CHECK(r.schedule->name == "sm90_wgmma_c32");
  CHECK(r.target.name == "sm_90a");
  CHECK(r.source == RouteSource::static_preference);
  CHECK(r.shape == ShapeKey{128, DType::bf16, StatePrecision::bf16, LayoutKind::fixed});
  INFO(r.explanation);
  CHECK_THAT(r.explanation, Contains("portable_c16: eligible on sm_90"));
  for (const char* name : {"sm100_m128_c32", "sm100_m64_c32", "sm100_n16_c16", "sm120_c32"}) {
    CHECK_THAT(r.explanation, Contains(std::string(name) + ": not eligible: no target for CC 9.0"));
  }
  CHECK_THAT(r.explanation, Contains("static preference: sm90_wgmma_c32"));
  CHECK_THAT(r.explanation, Contains("chosen: sm90_wgmma_c32 on sm_90a"));
  // a warp_mma request: the same order within the family (portable_c16 before its _m64 and _w8 variants)
  RouteRequest warp_mma;
  warp_mma.family = Family::warp_mma;
  CHECK(route(shipped_schedules(), device(9, 0), problem(), warp_mma).schedule->name == "portable_c16");
}

TEST_CASE("router: the route's shape key follows state dtype and layout", "[runtime][router]") {
  const RouteDecision r = route(shipped_schedules(), device(9, 0),
                                problem(LayoutKind::packed, true, StatePrecision::fp32), {});
  CHECK(r.schedule->family == Family::wgmma);
  CHECK(r.shape == ShapeKey{128, DType::bf16, StatePrecision::fp32, LayoutKind::packed});
}

TEST_CASE("router: unmeasured GPUs borrow their CC's measured table, the class by their own SM count",
          "[runtime][router]") {
  const TuningTable& shipped = TuningTable::shipped();
  RouteRequest request;
  request.tuning = &shipped;
  auto on = [](int cc_major, int cc_minor, int sms) {
    DeviceDescription d = device(cc_major, cc_minor);
    d.sm_count = sms;
    return d;
  };
  // 62 pairs (31 sequences x 2 heads): "few" on 132 SMs, "one_wave" on 114 and 78
  ProblemShape p = problem(LayoutKind::packed);
  p.num_seqs = 31;
  p.heads = 2;
  SECTION("H800 (132 SMs): the H200's own entry") {
    const RouteDecision r = route(shipped_schedules(), on(9, 0, 132), p, request);
    CHECK(r.source == RouteSource::measured_table);
    CHECK(r.schedule->name == "sm90_wgmma_c32");
    CHECK_THAT(r.explanation, Contains("tuning table: sm90_wgmma_c32 for cc9.0-sm132 / few"));
  }
  SECTION("H100 PCIe (114 SMs) and H20 (78 SMs): borrowed from cc9.0-sm132") {
    for (const int sms : {114, 78}) {
      const RouteDecision r = route(shipped_schedules(), on(9, 0, sms), p, request);
      INFO(r.explanation);
      CHECK(r.source == RouteSource::borrowed_table);
      CHECK(r.schedule->name == "sm90_wgmma_c32");
      CHECK_THAT(r.explanation, Contains(fmt::format("tuning table (borrowed from cc9.0-sm132 for cc9.0-sm{}, class by "
                                                     "its {} SMs): sm90_wgmma_c32 for cc9.0-sm132 / one_wave",
                                                     sms, sms)));
    }
  }
  SECTION("the nearest SM count of the CC is borrowed") {
    TuningTable two;
    two.set(tuning_device_key(9, 0, 132), ShapeClass::one_wave, "sm90_wgmma_c16");
    two.set(tuning_device_key(9, 0, 80), ShapeClass::one_wave, "portable_c16_m64");
    RouteRequest near;
    near.tuning = &two;
    CHECK(route(shipped_schedules(), on(9, 0, 78), p, near).schedule->name == "portable_c16_m64");
    CHECK(route(shipped_schedules(), on(9, 0, 114), p, near).schedule->name == "sm90_wgmma_c16");
  }
  SECTION("B200 (148 SMs): no table for CC 10.0, the static preference (warp_mma before tcgen05)") {
    const RouteDecision r = route(shipped_schedules(), on(10, 0, 148), p, request);
    CHECK(r.source == RouteSource::static_preference);
    CHECK(r.schedule->name == "portable_c16");
    CHECK_THAT(r.explanation, Contains("tuning table: no entry for CC 10.0 / few_tiny (nor few_short, few); static preference: portable_c16"));
  }
}

TEST_CASE("router: CC 12.0 takes an SM120 design only once it passed kdajit selftest", "[runtime][router]") {
  // before a selftest: portable_c16, whose source ran on the H200 (as sm_90), not the never-run SM120 designs
  const RouteDecision before = route(shipped_schedules(), device(12, 0), problem(), {});
  INFO(before.explanation);
  CHECK(before.schedule->name == "portable_c16");
  CHECK(before.target.name == "sm_120a");
  for (const char* name : {"sm120_c32", "sm120_decomposed_c16"}) {
    CHECK_THAT(before.explanation, Contains(fmt::format("{}: eligible on sm_120a (sm_120a is the schedule's "
                                                        "architecture-specific or family target for CC 12.0; never run "
                                                        "on such hardware and not self-tested here (kdajit selftest): "
                                                        "ranked last)",
                                                        name)));
  }
  // after: the design made for CC 12.x before the portable ones (without a
  // tuning table, the decomposed one: the SM-count table below decides)
  RouteRequest trusted;
  trusted.selftest_passed = [](const Schedule& s, const Target& t) {
    return s.name == "sm120_decomposed_c16" && t.name == "sm_120a";
  };
  const RouteDecision after = route(shipped_schedules(), device(12, 0), problem(), trusted);
  INFO(after.explanation);
  CHECK(after.schedule->name == "sm120_decomposed_c16");
  CHECK(after.target.name == "sm_120a");
  CHECK_THAT(after.explanation, Contains("never run on such hardware before, passed kdajit selftest on this device"));
}

TEST_CASE("router: CC 12.1 routes to the SM120 design on plain sm_120; an sm_120a build is refused there",
          "[runtime][router]") {
  RouteRequest trusted;
  trusted.selftest_passed = [](const Schedule&, const Target& t) { return t.name == "sm_120"; };
  const RouteDecision r = route(shipped_schedules(), device(12, 1), problem(), trusted);
  REQUIRE(r.schedule != nullptr);
  CHECK(r.schedule->name == "sm120_c32"); // no tuning table: the longer chunk first
  CHECK(r.target.name == "sm_120");
  INFO(r.explanation);
  CHECK_THAT(r.explanation, Contains("sm_120 is the highest plain target of CC 12.x not newer than 12.1"));
  const TargetChoice specific = explicit_target(shipped("portable_c16"), "sm_120a", device(12, 1));
  CHECK_FALSE(specific.target);
  CHECK_THAT(specific.reason, Contains("target sm_120a (CC 12.0) does not run on CC 12.1"));
  // and CC 12.0 may ask for the plain build, which runs there too
  CHECK(explicit_target(shipped("portable_c16"), "sm_120", device(12, 0)).target->name == "sm_120");
}

TEST_CASE("router: the SM-count table decides fused or decomposed on CC 12.x, a device it never measured labelled",
          "[runtime][router]") {
  const TuningTable& table = TuningTable::shipped(); // tuning/sm120.json
  struct Case {
    int cc_minor;
    int sm_count;
    std::int64_t threshold;
    bool fallback;
  };
  for (const Case c : {Case{0, 110, 128, false}, Case{0, 156, 144, false}, Case{0, 188, 144, false},
                       Case{0, 170, 144, true}, Case{1, 48, 144, true}}) {
    INFO(fmt::format("CC 12.{} with {} SMs", c.cc_minor, c.sm_count));
    const std::optional<DecompositionRule> rule = table.decomposition_rule(12, c.cc_minor, c.sm_count);
    REQUIRE(rule);
    CHECK(rule->cc == "cc12.0");
    CHECK(rule->fused_min_pairs == c.threshold);
    CHECK(rule->fallback == c.fallback);
    CHECK(rule->sm_count == (c.fallback ? 156 : c.sm_count));
    DeviceDescription d = device(12, c.cc_minor);
    d.sm_count = c.sm_count;
    RouteRequest request;
    request.tuning = &table;
    request.selftest_passed = [](const Schedule&, const Target&) { return true; }; // every CC 12 schedule passed
    // two sequences: N x H = 2 heads, one pair below and at the threshold
    const int below = static_cast<int>(c.threshold / 2) - 1;
    const int at = static_cast<int>(c.threshold / 2);
    const RouteDecision few = route(shipped_schedules(), d, problem(LayoutKind::fixed, false, StatePrecision::bf16, below),
                                    request);
    INFO(few.explanation);
    CHECK(few.schedule->name == "sm120_decomposed_c16");
    CHECK_THAT(few.decomposition_table, Contains(fmt::format("N x H = {} < {}: the decomposed design", 2 * below,
                                                             c.threshold)));
    CHECK_THAT(few.explanation, Contains(few.decomposition_table + "\n"));
    const RouteDecision many = route(shipped_schedules(), d, problem(LayoutKind::fixed, false, StatePrecision::bf16, at),
                                     request);
    INFO(many.explanation);
    CHECK_THAT(many.decomposition_table, Contains(fmt::format("N x H = {} >= {}: the fused design", 2 * at,
                                                              c.threshold)));
    CHECK(many.schedule->name == "sm120_c32");
    CHECK(many.target.name == (c.cc_minor == 0 ? "sm_120a" : "sm_120"));
    // without its selftest record the fused design is not taken: said, and the decomposed one runs
    RouteRequest decomposed_only = request;
    decomposed_only.selftest_passed = [](const Schedule& s, const Target&) { return s.name != "sm120_c32"; };
    const RouteDecision untested = route(shipped_schedules(), d,
                                         problem(LayoutKind::fixed, false, StatePrecision::bf16, at), decomposed_only);
    INFO(untested.explanation);
    CHECK(untested.schedule->name == "sm120_decomposed_c16");
    CHECK_THAT(untested.explanation,
               Contains("the fused design; no fused schedule is eligible and trusted here, a decomposed one runs"));
    if (c.fallback) {
      CHECK_THAT(few.decomposition_table,
                 Contains(fmt::format("cc12.0, the 156-SM part's threshold (fallback: CC 12.{} with {} SMs was never "
                                      "measured)",
                                      c.cc_minor, c.sm_count)));
    } else {
      CHECK_THAT(few.decomposition_table, Contains(fmt::format("cc12.0, {} SMs (measured)", c.sm_count)));
    }
  }
  // other CCs: no rule, no line
  CHECK_FALSE(table.decomposition_rule(9, 0, 132));
  CHECK_FALSE(table.decomposition_rule(10, 0, 148));
  RouteRequest request;
  request.tuning = &table;
  CHECK(route(shipped_schedules(), device(9, 0), problem(), request).decomposition_table.empty());
  // an explicit schedule is never second-guessed by the table
  request.schedule = "portable_c16";
  CHECK(route(shipped_schedules(), device(12, 0), problem(), request).decomposition_table.empty());
}

TEST_CASE("router: the SM-count table round-trips and refuses a malformed entry", "[runtime][router]") {
  const nlohmann::json good = {{"format_version", 1},
                               {"devices", nlohmann::json::object()},
                               {"decomposition",
                                {{"cc12.0", {{"fused_min_pairs", {{"110", 128}, {"156", 144}}}, {"fallback_sm_count", 156}}}}}};
  const std::optional<TuningTable> t = TuningTable::from_json(good);
  REQUIRE(t);
  CHECK(t->to_json() == good);
  CHECK(t->decomposition_rule(12, 0, 110)->fused_min_pairs == 128);
  nlohmann::json bad_fallback = good;
  bad_fallback["decomposition"]["cc12.0"]["fallback_sm_count"] = 188; // not a measured part
  CHECK_FALSE(TuningTable::from_json(bad_fallback));
  nlohmann::json bad_key = good;
  bad_key["decomposition"]["rtx5090"] = good["decomposition"]["cc12.0"]; // never a device name
  CHECK_FALSE(TuningTable::from_json(bad_key));
  nlohmann::json bad_count = good;
  bad_count["decomposition"]["cc12.0"]["fused_min_pairs"]["many"] = 1;
  CHECK_FALSE(TuningTable::from_json(bad_count));
}

TEST_CASE("router: explicit and unknown schedule requests", "[runtime][router]") {
  SECTION("sm100_m128_c32 on CC 9.0 is refused with the reason") {
    const std::string m =
        route_refusal(shipped_schedules(), device(9, 0), problem(), RouteRequest{std::string("sm100_m128_c32")});
    CHECK_THAT(m, Contains("no eligible schedule for CC 9.0"));
    CHECK_THAT(m, Contains("sm100_m128_c32: not eligible: no target for CC 9.0"));
    CHECK_THAT(m, !Contains("portable_c16")); // only the requested schedule is considered
  }
  SECTION("an unknown name") {
    const std::string m =
        route_refusal(shipped_schedules(), device(9, 0), problem(), RouteRequest{std::string("nope")});
    CHECK_THAT(m, Contains("no shipped schedule is named 'nope'"));
  }
  SECTION("portable_c16 by name") {
    const RouteDecision r =
        route(shipped_schedules(), device(9, 0), problem(), RouteRequest{std::string("portable_c16")});
    CHECK(r.schedule->name == "portable_c16");
    CHECK(r.target.name == "sm_90");
  }
}

TEST_CASE("router: CC 10.0 and 10.3 list the fused M128 design as eligible; auto takes it only after a selftest passed",
          "[runtime][router]") {
  const SelftestTrust tcgen05_passed = [](const Schedule& s, const Target&) { return s.family == Family::tcgen05; };
  for (const DeviceDescription& d : {device(10, 0, 13, 0), device(10, 0, 12, 8), device(10, 3, 13, 0)}) {
    INFO("CC " << d.cc_major << "." << d.cc_minor << " NVRTC " << d.nvrtc_major << "." << d.nvrtc_minor);
    const std::string family_target = d.nvrtc_major >= 13 ? "sm_100f" : (d.cc_minor == 3 ? "sm_103a" : "sm_100a");
    // no measured table for Blackwell ships, no selftest passed: the static
    // preference, warp_mma before tcgen05 (never run on such hardware)
    const RouteDecision r = route(shipped_schedules(), d, problem(), {});
    CHECK(r.schedule->name == "portable_c16");
    CHECK_THAT(r.explanation, Contains("never run on such hardware and not self-tested here (kdajit selftest): ranked "
                                       "last"));
    CHECK_THAT(r.explanation, Contains("sm100_m128_c32: eligible on " + family_target));
    CHECK_THAT(r.explanation, Contains("sm100_n16_c16: eligible on " + family_target));
    CHECK_THAT(r.explanation, Contains("sm100_m64_c32: eligible on " + family_target));
    // asked for by name, M128 runs on the family (CUDA >= 12.9) or architecture-specific target
    const RouteDecision m128 = route(shipped_schedules(), d, problem(), RouteRequest{std::string("sm100_m128_c32")});
    CHECK(m128.schedule->name == "sm100_m128_c32");
    CHECK(m128.target.name == family_target);
    // a table naming it is not taken before the schedule passed selftest here ...
    TuningTable table;
    table.set(tuning_device_key(d.cc_major, d.cc_minor, d.sm_count), shape_class(2 * 4, d.sm_count, 1024), "sm100_m128_c32");
    RouteRequest tuned;
    tuned.tuning = &table;
    const RouteDecision before = route(shipped_schedules(), d, problem(), tuned);
    CHECK(before.schedule->name == "portable_c16");
    CHECK_THAT(before.explanation, Contains("names sm100_m128_c32 for"));
    CHECK_THAT(before.explanation, Contains("which has not passed kdajit selftest on this device"));
    // ... and is after (kdajit tune runs selftest first)
    tuned.selftest_passed = tcgen05_passed;
    CHECK(route(shipped_schedules(), d, problem(), tuned).schedule->name == "sm100_m128_c32");
    // without a table, a passed selftest puts the tcgen05 family first: chunk 32, then the name
    RouteRequest trusted;
    trusted.selftest_passed = tcgen05_passed;
    const RouteDecision after = route(shipped_schedules(), d, problem(), trusted);
    CHECK(after.schedule->name == "sm100_m128_c32");
    CHECK_THAT(after.explanation, Contains("passed kdajit selftest on this device"));
    // a family request is an explicit opt-in: no selftest needed
    RouteRequest family;
    family.family = Family::tcgen05;
    family.tuning = &table;
    CHECK(route(shipped_schedules(), d, problem(), family).schedule->name == "sm100_m128_c32");
    // a pass of one schedule trusts that schedule only
    trusted.selftest_passed = [](const Schedule& s, const Target&) { return s.name == "sm100_n16_c16"; };
    CHECK(route(shipped_schedules(), d, problem(), trusted).schedule->name == "sm100_n16_c16");
    CHECK_THAT(r.explanation, Contains("sm120_c32: not eligible: no target for CC 10."));
    CHECK_THAT(r.explanation, Contains("portable_c16_m64: not eligible: no target for CC 10."));
  }
  const RouteDecision b300 = route(shipped_schedules(), device(10, 3, 12, 8), problem(), {});
  CHECK(b300.target.name == "sm_103a");
}

TEST_CASE("router: layout, state dtype and heads the schedule does not list", "[runtime][router]") {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["eligibility"]["layouts"] = {"fixed"};
  doc["eligibility"]["state_dtypes"] = {"fp32"};
  doc["eligibility"]["heads"] = {{"min", 2}, {"max", 8}};
  const std::vector<Schedule> narrow = {parse_schedule(doc, "narrow.json")};
  const DeviceDescription h200 = device(9, 0);
  const Target sm90 = test::target_named("sm_90");

  CHECK(ineligibility(narrow[0], sm90, problem(LayoutKind::fixed, true, StatePrecision::fp32)).empty());
  // No state read or written: the state dtype does not matter.
  CHECK(ineligibility(narrow[0], sm90, problem(LayoutKind::fixed, false, StatePrecision::bf16)).empty());

  CHECK(ineligibility(narrow[0], sm90, problem(LayoutKind::packed)) == "layout 'packed' is not supported");
  CHECK(ineligibility(narrow[0], sm90, problem(LayoutKind::fixed, true, StatePrecision::bf16)) ==
        "state dtype 'bf16' is not supported");
  CHECK(ineligibility(narrow[0], sm90, problem(LayoutKind::fixed, false, StatePrecision::bf16, 16)) ==
        "16 heads is outside its head range");
  CHECK(ineligibility(narrow[0], sm90, problem(LayoutKind::fixed, false, StatePrecision::bf16, 1)) ==
        "1 heads is outside its head range");

  const std::string m = route_refusal(narrow, h200, problem(LayoutKind::fixed, true, StatePrecision::bf16));
  CHECK_THAT(m, Contains("portable_c16: not eligible: state dtype 'bf16' is not supported"));
  CHECK_THAT(route_refusal(narrow, h200, problem(LayoutKind::packed)),
             Contains("not eligible: layout 'packed' is not supported"));
}

TEST_CASE("router: an invalid schedule for its target is ineligible with the validation message", "[runtime][router]") {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["targets"] = {"sm_120a"};
  // 16 recurrence stages: far more shared memory than sm_120a's 101,376 bytes per block.
  doc["kernels"][1]["pipeline"]["stages"] = 16;
  const std::vector<Schedule> big = {parse_schedule(doc, "big.json")};
  const std::string why = ineligibility(big[0], test::target_named("sm_120a"), problem());
  INFO(why);
  CHECK_THAT(why, Contains("exceeds sm_120a's limit of 101,376 B"));
  CHECK_THAT(route_refusal(big, device(12, 0), problem()), Contains("portable_c16: not eligible: total SMEM"));
}

TEST_CASE("router: a lower_bound outside a schedule's safe range makes it ineligible", "[runtime][router]") {
  std::vector<Schedule> schedules = {shipped("portable_c16"), shipped("portable_c16_w8")};
  schedules[0].eligibility.lower_bound.min = -2.0; // a narrower design listed first
  ProblemShape p = problem();
  p.lower_bound = -3.0;
  const RouteDecision d = route(schedules, device(9, 0), p, {});
  REQUIRE(d.schedule != nullptr);
  CHECK(d.schedule->name == "portable_c16_w8");
  CHECK_THAT(d.explanation, Contains("portable_c16: not eligible: lower_bound -3 is outside its range [-2, 0)"));
  p.lower_bound = -1.0;
  CHECK(route(schedules, device(9, 0), p, {}).schedule->name == "portable_c16");
  // an explicit request for the narrower design is refused with the reason
  p.lower_bound = -3.0;
  RouteRequest request;
  request.schedule = "portable_c16";
  CHECK_THROWS_WITH(route(schedules, device(9, 0), p, request), Contains("argument 'lower_bound'") &&
                                                                     Contains("lower_bound -3 is outside its range [-2, 0)"));
}

TEST_CASE("router: a family request chooses only among that family and is refused with every reason", "[runtime][router]") {
  RouteRequest wgmma;
  wgmma.family = Family::wgmma;
  const RouteDecision h200 = route(shipped_schedules(), device(9, 0), problem(), wgmma);
  REQUIRE(h200.schedule != nullptr);
  CHECK(h200.schedule->family == Family::wgmma);
  CHECK(h200.target.name == "sm_90a");
  CHECK_THAT(h200.explanation, !Contains("portable_c16:"));

  // The tuning table's choice outside the family is set aside.
  TuningTable table;
  table.set(tuning_device_key(9, 0, 132), shape_class(2 * 4, 132, 1024), "sm90_wgmma_c16");
  RouteRequest warp_mma;
  warp_mma.family = Family::warp_mma;
  warp_mma.tuning = &table;
  const RouteDecision portable = route(shipped_schedules(), device(9, 0), problem(), warp_mma);
  CHECK(portable.schedule->family == Family::warp_mma);
  CHECK_THAT(portable.explanation, Contains("not a warp_mma schedule; static preference: portable_c16"));

  // The tcgen05 family on a Blackwell device, no table: the first of M128, M64, N16.
  RouteRequest tcgen05;
  tcgen05.family = Family::tcgen05;
  const RouteDecision b200 = route(shipped_schedules(), device(10, 0), problem(), tcgen05);
  CHECK(b200.schedule->name == "sm100_m128_c32");
  CHECK_THAT(b200.explanation, Contains("sm100_m64_c32: eligible on sm_100f"));
  // and the same request on a Hopper device names no target for its schedules
  CHECK_THROWS_WITH(route(shipped_schedules(), device(9, 0), problem(), tcgen05),
                    Contains("sm100_n16_c16: not eligible: no target for CC 9.0"));
}

TEST_CASE("router: an explicit target (the sm_90a proxy) needs the schedule and a device that runs it", "[runtime][router]") {
  RouteRequest proxy{std::string("sm100_m128_c32")};
  proxy.target = "sm_90a_proxy";
  const RouteDecision h200 = route(shipped_schedules(), device(9, 0), problem(), proxy);
  CHECK(h200.schedule->name == "sm100_m128_c32");
  CHECK(h200.target.name == "sm_90a_proxy");
  CHECK_THAT(h200.explanation, Contains("the sm_90a proxy of the schedule's tcgen05 kernel"));
  // not on a Blackwell device (the proxy is sm_90a code)
  CHECK_THAT(route_refusal(shipped_schedules(), device(10, 0), problem(), proxy),
             Contains("target sm_90a_proxy (CC 9.0) does not run on CC 10.0"));
  // only a tcgen05 schedule has a proxy
  RouteRequest wgmma{std::string("sm90_wgmma_c32")};
  wgmma.target = "sm_90a_proxy";
  CHECK_THAT(route_refusal(shipped_schedules(), device(9, 0), problem(), wgmma),
             Contains("the schedule does not list target sm_90a_proxy"));
  RouteRequest blackwell{std::string("sm100_m128_c32")};
  blackwell.target = "sm_100a";
  CHECK_THAT(route_refusal(shipped_schedules(), device(9, 0), problem(), blackwell),
             Contains("target sm_100a (CC 10.0) does not run on CC 9.0"));
  RouteRequest unknown{std::string("sm100_m128_c32")};
  unknown.target = "sm_99z";
  CHECK_THAT(route_refusal(shipped_schedules(), device(9, 0), problem(), unknown), Contains("unknown target 'sm_99z'"));
  RouteRequest no_schedule;
  no_schedule.target = "sm_90a_proxy";
  CHECK_THROWS_WITH(route(shipped_schedules(), device(9, 0), problem(), no_schedule),
                    Contains("an explicit target needs an explicit schedule"));
}

// Issue 5, item 5: the variant choice of seed doc 003 as a table keyed by SM
// count and shape class (docs/routing/blackwell-seed003.json, opt-in: the
// kernels are compile-verified only), on simulated B200s.
TEST_CASE("router: the seed's Blackwell variant table picks M64 for few pairs and M128 otherwise", "[runtime][router]") {
  const TuningTable table = TuningTable::load(test::source_path("docs/routing/blackwell-seed003.json"));
  RouteRequest tuned;
  tuned.tuning = &table;
  tuned.selftest_passed = [](const Schedule& s, const Target&) { return s.family == Family::tcgen05; };
  for (int sms : {148, 152}) {
    DeviceDescription d = device(10, 0, 13, 0);
    d.sm_count = sms;
    const RouteDecision few = route(shipped_schedules(), d, problem(LayoutKind::fixed, true, StatePrecision::bf16, 32),
                                    tuned); // 64 pairs
    CHECK(few.schedule->name == "sm100_m64_c32");
    CHECK(few.target.name == "sm_100f");
    const RouteDecision wave =
        route(shipped_schedules(), d, problem(LayoutKind::fixed, true, StatePrecision::bf16, 48), tuned); // 96 pairs
    CHECK(wave.schedule->name == "sm100_m128_c32");
  }
  // NVRTC 12.8 predates the family target: the same choice, on sm_100a
  DeviceDescription old = device(10, 0, 12, 8);
  old.sm_count = 148;
  CHECK(route(shipped_schedules(), old, problem(LayoutKind::fixed, true, StatePrecision::bf16, 32), tuned).target.name ==
        "sm_100a");
  // not shipped: without the file a B200 routes to portable_c16
  CHECK(TuningTable::shipped().lookup("cc10.0-sm148", ShapeClass::few) == std::nullopt);
}

TEST_CASE("router: state pools, seq_order and checkpoints need a schedule that offers them", "[runtime][router][contract]") {
  nlohmann::json doc = test::shipped_schedule_json("portable_c16");
  doc["eligibility"]["state_pool"] = false;
  doc["eligibility"]["seq_order"] = false;
  doc["eligibility"]["checkpoints"] = false;
  const Schedule plain = parse_schedule(doc, "plain.json");
  const Target sm90 = test::target_named("sm_90");
  ProblemShape pool = problem(LayoutKind::packed, true);
  pool.state_pool = true;
  CHECK(ineligibility(plain, sm90, pool) == "state pools (ssm_state_indices) are not supported");
  CHECK(ineligibility(shipped("portable_c16"), sm90, pool).empty());
  ProblemShape order = problem(LayoutKind::packed);
  order.seq_order = true;
  CHECK(ineligibility(plain, sm90, order) == "seq_order is not supported");
  CHECK(ineligibility(shipped("portable_c16"), sm90, order).empty());
  ProblemShape checkpoints = problem(LayoutKind::packed);
  checkpoints.checkpoint_interval = 32;
  CHECK(ineligibility(plain, sm90, checkpoints) == "native checkpoints are not supported");
  CHECK(ineligibility(shipped("portable_c16"), sm90, checkpoints).empty());
}

TEST_CASE("router: a checkpoint interval the chunk size does not divide makes a schedule ineligible",
          "[runtime][router][contract]") {
  const DeviceDescription h200 = device(9, 0);
  const Target sm90a = test::target_named("sm_90a");
  for (const std::int64_t every : {16, 32, 48, 64}) {
    ProblemShape p = problem(LayoutKind::packed, true);
    p.checkpoint_interval = every;
    INFO("every " << every);
    const std::string why = ineligibility(shipped("sm90_wgmma_c32"), sm90a, p);
    CHECK(why == (every % 32 == 0 ? std::string() : fmt::format("checkpoint interval {} is not a multiple of its "
                                                                 "chunk size 32",
                                                                 every)));
    CHECK(ineligibility(shipped("sm90_wgmma_c16"), sm90a, p).empty());
    // routing picks a schedule whose chunk divides the interval, and compiles checkpoints in
    const RouteDecision r = route(shipped_schedules(), h200, p, RouteRequest{});
    CHECK(every % r.schedule->chunk_size == 0);
    CHECK(r.shape.checkpoints);
    CHECK(r.shape.canonical() == "d128.in_bf16.state_bf16.packed.checkpoints");
  }
  // an explicit request for a schedule that cannot take the interval is refused
  ProblemShape p = problem(LayoutKind::packed, true);
  p.checkpoint_interval = 48;
  RouteRequest explicit_c32;
  explicit_c32.schedule = "sm90_wgmma_c32";
  CHECK_THAT(route_refusal(shipped_schedules(), h200, p, explicit_c32),
             Contains("sm90_wgmma_c32: not eligible: checkpoint interval 48 is not a multiple of its chunk size 32"));
  // without checkpoints the shape key has none
  CHECK_FALSE(route(shipped_schedules(), h200, problem(LayoutKind::packed, true), RouteRequest{}).shape.checkpoints);
}

TEST_CASE("router: a shipped design no GPU has run yet is taken only when asked for or after selftest passed it",
          "[runtime][router]") {
  const DeviceDescription h200 = device(9, 0);
  ProblemShape many_short = problem(LayoutKind::packed, true);
  many_short.num_seqs = 256;
  many_short.total_tokens = 64 * 256;
  many_short.heads = 32;
  many_short.beta_token_stride = 32;
  ProblemShape many_tiny = many_short;
  many_tiny.num_seqs = 1024;
  many_tiny.total_tokens = 8 * 1024;
  many_tiny.heads = 96;
  many_tiny.beta_token_stride = 96;
  // the shipped persistent-grid designs ran on CC 9.0 hardware; the measured
  // table takes sm90_wgmma_c16_persistent for many short sequences and
  // sm90_wgmma_c16_fused for many tiny ones
  for (const char* name : {"sm90_wgmma_c16_persistent", "sm90_wgmma_c32_persistent", "sm90_wgmma_c16_fused"}) {
    INFO(name);
    CHECK(shipped(name).hardware_verified);
    CHECK(verified_on_hardware(shipped(name), test::target_named("sm_90a")));
  }
  RouteRequest shipped_table;
  shipped_table.tuning = &TuningTable::shipped();
  const RouteDecision measured = route(shipped_schedules(), h200, many_short, shipped_table);
  CHECK(measured.schedule->name == "sm90_wgmma_c16_persistent");
  CHECK_THAT(measured.explanation, Contains("sm90_wgmma_c16_persistent for cc9.0-sm132 / many_short"));
  const RouteDecision tiny = route(shipped_schedules(), h200, many_tiny, shipped_table);
  CHECK(tiny.schedule->name == "sm90_wgmma_c16_fused");
  CHECK_THAT(tiny.explanation, Contains("sm90_wgmma_c16_fused for cc9.0-sm132 / many_tiny"));
  // the same designs marked as never run (hardware_verified false): neither
  // the static preference nor the measured table takes them
  std::vector<Schedule> unverified = shipped_schedules();
  for (Schedule& s : unverified) {
    if (s.name == "sm90_wgmma_c16_persistent" || s.name == "sm90_wgmma_c32_persistent") {
      s.hardware_verified = false;
      CHECK_FALSE(verified_on_hardware(s, test::target_named("sm_90a")));
    }
  }
  const RouteDecision automatic = route(unverified, h200, many_short, {});
  CHECK(automatic.schedule->name == "sm90_wgmma_c32");
  CHECK_THAT(automatic.explanation, Contains("sm90_wgmma_c16_persistent: eligible on sm_90a"));
  CHECK_THAT(automatic.explanation, Contains("not self-tested here (kdajit selftest): ranked last"));
  TuningTable table;
  const std::string key = tuning_device_key(9, 0, 132);
  table.set(key, shape_class(256 * 32, 132, 64), "sm90_wgmma_c32_persistent");
  RouteRequest tuned;
  tuned.tuning = &table;
  CHECK(route(unverified, h200, many_short, tuned).schedule->name != "sm90_wgmma_c32_persistent");
  // once it passed selftest on the device the table's entry holds
  tuned.selftest_passed = [](const Schedule& s, const Target&) { return s.name == "sm90_wgmma_c32_persistent"; };
  CHECK(route(unverified, h200, many_short, tuned).schedule->name == "sm90_wgmma_c32_persistent");
  // asked for by name it runs at once
  const RouteDecision asked = route(unverified, h200, many_short, RouteRequest{std::string("sm90_wgmma_c32_persistent")});
  CHECK(asked.schedule->name == "sm90_wgmma_c32_persistent");
  CHECK(asked.target.name == "sm_90a");
}
