// parse_ptxas_resource_log on logs captured from NVRTC 13.0 (tests/runtime/ptxas_logs/,
// produced with --ptxas-options=-v as kdajit passes it) and on the older layout.
#include "runtime/ptxas_log.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using runtime::parse_ptxas_resource_log;
using runtime::ResourceUsage;

namespace {

std::string captured_log(const std::string& name) {
  return test::read_text(test::source_path("tests/runtime/ptxas_logs/" + name));
}

} // namespace

TEST_CASE("ptxas log: two entries on sm_90a, one spilling", "[runtime][ptxas_log]") {
  const auto usage = parse_ptxas_resource_log(captured_log("sm_90a_spill_two_entries.log"));
  REQUIRE(usage.size() == 2);
  // registers, static smem, stack frame, spill stores, spill loads, barriers
  CHECK(usage.at("spill") == ResourceUsage{64, 0, 5104, 5880, 7064, 0});
  CHECK(usage.at("small") == ResourceUsage{12, 16, 0, 0, 0, 1});
}

TEST_CASE("ptxas log: cmem items and a non-inlined device function on sm_80", "[runtime][ptxas_log]") {
  const auto usage = parse_ptxas_resource_log(captured_log("sm_80_device_function_cmem.log"));
  // _Z6helperfi has "Function properties" but is no entry point.
  REQUIRE(usage.size() == 2);
  CHECK(usage.at("kda_b") == ResourceUsage{10, 0, 0, 0, 0, 1});
  CHECK(usage.at("kda_a") == ResourceUsage{34, 0, 256, 0, 0, 0});
  CHECK_FALSE(usage.contains("_Z6helperfi"));
}

TEST_CASE("ptxas log: --warn-on-spills lines and a mangled entry on sm_100a", "[runtime][ptxas_log]") {
  const auto usage = parse_ptxas_resource_log(captured_log("sm_100a_warn_on_spills_mangled.log"));
  REQUIRE(usage.size() == 2);
  CHECK(usage.at("kda_tiny") == ResourceUsage{10, 128, 0, 0, 0, 1});
  CHECK(usage.at("_Z6scaledILi256EEvPfPKf") == ResourceUsage{40, 0, 2992, 3536, 4356, 0});
}

TEST_CASE("ptxas log: the older layout (indented frame line, no barrier item)", "[runtime][ptxas_log]") {
  // Hand-written in the layout of earlier ptxas releases, not captured here.
  const std::string log = "ptxas info    : 0 bytes gmem\n"
                          "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                          "ptxas info    : Function properties for k\n"
                          "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                          "ptxas info    : Used 14 registers, 16 bytes smem, 352 bytes cmem[0]\n"
                          "ptxas info    : Compiling entry function 'j' for 'sm_90a'\n"
                          "ptxas info    : Function properties for j\n"
                          "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                          "ptxas info    : Used 14 registers, used 1 barriers, 16 bytes smem, 352 bytes cmem[0]\n";
  const auto usage = parse_ptxas_resource_log(log);
  REQUIRE(usage.size() == 2);
  CHECK(usage.at("k") == ResourceUsage{14, 16, 8, 4, 12, 0});
  CHECK(usage.at("j") == ResourceUsage{14, 16, 0, 0, 0, 1});
}

TEST_CASE("ptxas log: no resource lines gives no entries", "[runtime][ptxas_log]") {
  CHECK(parse_ptxas_resource_log("").empty());
  CHECK(parse_ptxas_resource_log("warn.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n")
            .empty());
}

TEST_CASE("ptxas log: wgmma serialization and injected waits name their entry", "[runtime][ptxas_log]") {
  // Captured from the first sm90_wgmma_c16_m64 recurrence (an m64n144k16
  // whose accumulator tail was copied from the projection's).
  const auto usage = parse_ptxas_resource_log(captured_log("sm_90a_wgmma_serialized.log"));
  REQUIRE(usage.size() == 2);
  const ResourceUsage& recurrence = usage.at("kda_prefill_sm90_wgmma_c16_m64_recurrence");
  CHECK(recurrence.registers == 127);
  CHECK(recurrence.wgmma_serialized);
  CHECK(recurrence.wgmma_wait_injected);
  const ResourceUsage& prepare = usage.at("kda_prefill_sm90_wgmma_c16_m64_prepare");
  CHECK(prepare.registers == 68);
  CHECK_FALSE(prepare.wgmma_serialized);
  CHECK_FALSE(prepare.wgmma_wait_injected);
}
