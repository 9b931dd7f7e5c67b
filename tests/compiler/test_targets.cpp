#include "compiler/target.hpp"

#include <catch2/catch.hpp>

using namespace kda;

TEST_CASE("target table matches architecture.md", "[compiler][target]") {
  struct Row {
    const char* name;
    std::int64_t smem;
    int tmem;
    bool wgmma;
    bool tcgen05;
  };
  const Row rows[] = {{"sm_80", 166'912, 0, false, false},    {"sm_90", 232'448, 0, false, false},
                      {"sm_90a", 232'448, 0, true, false},    {"sm_100a", 232'448, 512, false, true},
                      {"sm_100f", 232'448, 512, false, true}, {"sm_103a", 232'448, 512, false, true},
                      {"sm_120a", 101'376, 0, false, false},  {"sm_120", 101'376, 0, false, false}};
  REQUIRE(all_targets().size() == std::size(rows) + 2); // and the two proxies below
  for (const Row& row : rows) {
    INFO(row.name);
    const std::optional<Target> t = find_target(row.name);
    REQUIRE(t.has_value());
    CHECK(t->max_smem_per_block == row.smem);
    CHECK(t->tmem_columns == row.tmem);
    CHECK(t->allows(Family::warp_mma));
    CHECK(t->allows(Family::wgmma) == row.wgmma);
    CHECK(t->allows(Family::tcgen05) == row.tcgen05);
  }
  CHECK_FALSE(find_target("sm_101a").has_value());
  // The sm_90a proxy of the tcgen05 targets: compiled as sm_90a, only tcgen05 schedules.
  const std::optional<Target> proxy = find_target("sm_90a_proxy");
  REQUIRE(proxy.has_value());
  CHECK(proxy->tcgen05_proxy);
  CHECK(proxy->arch() == "sm_90a");
  CHECK(proxy->allows(Family::tcgen05));
  CHECK_FALSE(proxy->allows(Family::wgmma));
  CHECK(proxy->max_smem_per_block == 232'448);
  // The sm_90a proxy of sm_120a: an sm_120a plan under SM120's limits, compiled as sm_90a.
  const std::optional<Target> sm120_proxy = find_target("sm_120a_proxy");
  REQUIRE(sm120_proxy.has_value());
  CHECK(sm120_proxy->proxy_of == "sm_120a");
  CHECK(sm120_proxy->arch() == "sm_90a");
  CHECK(sm120_proxy->max_smem_per_block == find_target("sm_120a")->max_smem_per_block);
  CHECK(sm120_proxy->smem_per_sm == find_target("sm_120a")->smem_per_sm);
  CHECK(sm120_proxy->max_threads_per_sm == 1536);
  CHECK_FALSE(sm120_proxy->allows(Family::wgmma));
  CHECK_FALSE(sm120_proxy->tcgen05_proxy);
  for (const Target& t : all_targets()) {
    INFO(t.name);
    CHECK((t.tcgen05_proxy || !t.proxy_of.empty() || t.arch() == t.name));
    // what ran on the H200: sm_90, sm_90a and the proxies
    CHECK(t.verified_on_hardware == (t.name == "sm_90" || t.name == "sm_90a" || t.arch() == "sm_90a"));
  }
  CHECK(find_target("sm_100f")->variant == ArchVariant::family);
  CHECK(find_target("sm_103a")->cc_minor == 3);
  CHECK(find_target("sm_120")->variant == ArchVariant::plain);
  CHECK(find_target("sm_120a")->variant == ArchVariant::arch_specific);
}
