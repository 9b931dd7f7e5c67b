// kdajit selftest's records: kept in the local tuning
// table beside its entries, matched on their whole identity, and the trust
// routing derives from them, on simulated devices (no GPU).
#include "compiler/schedule_library.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/generator_identity.hpp"
#include "runtime/router.hpp"
#include "runtime/selftest_trust.hpp"
#include "runtime/tier0_codegen.hpp"
#include "runtime/tuning_table.hpp"

#include <catch2/catch.hpp>

using namespace kda;

namespace {

SelftestEnvironment b200_env() {
  return {"cc10.0-sm148", 13000, "13.0"};
}

DeviceDescription b200() {
  DeviceDescription d;
  d.cc_major = 10;
  d.cc_minor = 0;
  d.sm_count = 148;
  return d;
}

const Schedule& shipped(const std::string& name) {
  const Schedule* s = find_shipped_schedule(name);
  REQUIRE(s != nullptr);
  return *s;
}

Target target(const std::string& name) {
  const std::optional<Target> t = find_target(name);
  REQUIRE(t);
  return *t;
}

} // namespace

TEST_CASE("selftest records: a JSON round trip beside the table's entries, replaced by identity",
          "[runtime][tuning][selftest]") {
  TuningTable t;
  t.set("cc10.0-sm148", ShapeClass::few, "sm100_m64_c32");
  SelftestRecord r = selftest_identity(shipped("sm100_m128_c32"), target("sm_100f"), b200_env());
  CHECK(r.source_sha256.size() == 64);
  CHECK(r.device == "cc10.0-sm148");
  r.pass = false;
  r.detail = "the child timed out after 300 s (killed)";
  t.record_selftest(r);
  r.pass = true;
  r.detail = "packed 5 seqs H4 bf16 standard: output 3.0e-03, state 2.0e-03";
  t.record_selftest(r); // the same identity: replaces
  REQUIRE(t.selftests().size() == 1);
  const std::optional<TuningTable> back = TuningTable::from_json(t.to_json());
  REQUIRE(back);
  REQUIRE(back->selftests().size() == 1);
  CHECK(back->selftests()[0].pass);
  CHECK(back->selftests()[0].detail == r.detail);
  CHECK(back->lookup("cc10.0-sm148", ShapeClass::few) == std::optional<std::string>("sm100_m64_c32"));
  SelftestRecord other = r;
  other.driver_version = 13010; // another driver: another identity
  CHECK(back->find_selftest(other) == nullptr);
  CHECK(back->find_selftest(r) != nullptr);
  // a table without records writes no "selftests" key (the shipped tables' format)
  TuningTable plain;
  plain.set("cc9.0-sm132", ShapeClass::few, "sm90_wgmma_c32");
  CHECK_FALSE(plain.to_json().contains("selftests"));
  // a malformed record makes the file unreadable as a table, as any malformed entry does
  nlohmann::json bad = t.to_json();
  bad["selftests"][0].erase("pass");
  CHECK_FALSE(TuningTable::from_json(bad));
}

TEST_CASE("selftest trust: only a passing record of the same device, driver, NVRTC, version and source",
          "[runtime][router][selftest]") {
  const Schedule& m128 = shipped("sm100_m128_c32");
  TuningTable t;
  const SelftestTrust none = selftest_trust(t, b200_env());
  CHECK_FALSE(none(m128, target("sm_100f")));
  SelftestRecord r = selftest_identity(m128, target("sm_100f"), b200_env());
  r.pass = true;
  t.record_selftest(r);
  const SelftestTrust trust = selftest_trust(t, b200_env());
  CHECK(trust(m128, target("sm_100f")));
  CHECK_FALSE(trust(m128, target("sm_100a"))); // another target: another source
  CHECK_FALSE(trust(shipped("sm100_m64_c32"), target("sm_100f")));
  SelftestEnvironment newer = b200_env();
  newer.driver_version = 13010;
  CHECK_FALSE(selftest_trust(t, newer)(m128, target("sm_100f")));
  SelftestEnvironment other_device = b200_env();
  other_device.device = "cc10.0-sm152";
  CHECK_FALSE(selftest_trust(t, other_device)(m128, target("sm_100f")));
  // a failed record is no trust
  r.pass = false;
  t.record_selftest(r);
  CHECK_FALSE(selftest_trust(t, b200_env())(m128, target("sm_100f")));
}

TEST_CASE("selftest trust: a simulated B200 routes to tcgen05 only after its selftest passed",
          "[runtime][router][selftest]") {
  ProblemShape p;
  p.layout = LayoutKind::fixed;
  p.batch = 2;
  p.seq_len = 64;
  p.total_tokens = 128;
  p.num_seqs = 2;
  p.heads = 4;
  TuningTable table;
  RouteRequest request;
  request.tuning = &table;
  request.selftest_passed = selftest_trust(table, b200_env());
  CHECK(route(shipped_schedules(), b200(), p, request).schedule->name == "portable_c16");
  SelftestRecord r = selftest_identity(shipped("sm100_m128_c32"), target("sm_100f"), b200_env());
  r.pass = true;
  table.record_selftest(r);
  request.selftest_passed = selftest_trust(table, b200_env()); // a trust answers each schedule once
  const RouteDecision after = route(shipped_schedules(), b200(), p, request);
  CHECK(after.schedule->name == "sm100_m128_c32");
  CHECK(after.target.name == "sm_100f");
}

TEST_CASE("verified on hardware: wgmma and warp_mma, not tcgen05", "[runtime][router][selftest]") {
  CHECK(verified_on_hardware(shipped("sm90_wgmma_c32"), target("sm_90a")));
  CHECK(verified_on_hardware(shipped("portable_c16"), target("sm_100a")));
  CHECK_FALSE(verified_on_hardware(shipped("sm100_m128_c32"), target("sm_100a")));
}

TEST_CASE("selftest records: an llvm-backend schedule is identified by the SHA-256 of its LLVM IR",
          "[runtime][tuning][selftest][ir]") {
  const SelftestEnvironment h200{"cc9.0-sm132", 13000, "13.0"};
  for (const char* name : {"token_llvm", "token_llvm_smem"}) {
    INFO(name);
    const SelftestRecord r = selftest_identity(shipped(name), target("sm_90a"), h200);
    CHECK(r.source_sha256 ==
          emitted_source_sha256(runtime::tier0_ir(lower(validate(shipped(name), target("sm_90a")), ShapeKey{})).text));
  }
  CHECK(selftest_identity(shipped("token_llvm"), target("sm_90a"), h200).source_sha256 !=
        selftest_identity(shipped("token_llvm_smem"), target("sm_90a"), h200).source_sha256);
}
