#include "compiler/plan_smem.hpp"
#include "schedule_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using nlohmann::json;

namespace {

json buffer(const std::string& name, std::vector<int> shape, const std::string& dtype, const std::string& region,
            std::pair<std::string, std::string> lifetime) {
  return {{"name", name}, {"shape", shape}, {"dtype", dtype}, {"region", region},
          {"lifetime", {lifetime.first, lifetime.second}}};
}

SmemLayout plan(const json& doc) {
  return plan_smem(parse_schedule(doc, "test.json").kernels.at(0));
}

} // namespace

TEST_CASE("planner places unaliased buffers one after another, aligned", "[compiler][smem]") {
  json doc = test::minimal_schedule_json();
  auto& buffers = doc["smem"]["buffers"];
  buffers.push_back(buffer("beta", {16}, "fp32", "stage", {"load", "store"}));
  buffers.push_back(buffer("tile", {16, 16}, "bf16", "stage", {"load", "store"}));
  buffers.back()["alignment"] = 1024;
  const SmemLayout s = plan(doc);
  CHECK(s.find("q_raw")->offset == 0);
  CHECK(s.find("kd")->offset == 4096);
  CHECK(s.find("beta")->offset == 8192);
  CHECK(s.find("tile")->offset == 9216); // 8,256 rounded up to 1,024
  CHECK(s.stage_used_bytes == 9216 + 512);
  CHECK(s.stage_alignment == 1024);
  CHECK(s.stage_bytes == 10240);
  CHECK(s.ring_bytes == 2 * 10240);
  CHECK(s.alignment_slack == 1024 - 16);
  CHECK(s.total_bytes == 2 * 10240 + 1008);
}

TEST_CASE("an alias starts where its buffer starts; a pinned offset is taken as given", "[compiler][smem]") {
  json doc = test::minimal_schedule_json();
  auto& buffers = doc["smem"]["buffers"];
  buffers[1]["alias"] = "q_raw";
  buffers.push_back(buffer("late", {8}, "fp32", "stage", {"mqk", "store"}));
  buffers.back()["offset"] = 8192;
  const SmemLayout s = plan(doc);
  CHECK(s.find("kd")->offset == 0);
  CHECK(s.find("kd")->alias_group == s.find("q_raw")->alias_group);
  CHECK(s.find("late")->offset == 8192);
  CHECK(s.find("late")->pinned);
  CHECK(s.find("late")->alias_group != s.find("q_raw")->alias_group);
  CHECK(s.stage_bytes == 8192 + 32);
}

TEST_CASE("the shared region follows the ring", "[compiler][smem]") {
  json doc = test::minimal_schedule_json();
  doc["pipeline"]["stages"] = 3;
  doc["smem"]["buffers"].push_back(buffer("out", {2, 16, 128}, "bf16", "shared", {"project", "store"}));
  doc["smem"]["buffers"].push_back(buffer("bar", {3}, "u64", "shared", {"load", "end"}));
  const SmemLayout s = plan(doc);
  CHECK(s.ring_bytes == 3 * 8192);
  CHECK(s.shared_offset == 3 * 8192);
  CHECK(s.find("out")->offset == 0);
  CHECK(s.find("bar")->offset == 8192);
  CHECK(s.shared_bytes == 8192 + 24);
  CHECK(s.total_bytes == 3 * 8192 + 8192 + 24);
  CHECK(s.find("bar")->last_phase == 5); // "end": one past the last phase
}

TEST_CASE("planning is deterministic", "[compiler][smem]") {
  const Schedule m128 = test::shipped_schedule("sm100_n16_c16");
  const SmemLayout a = plan_smem(m128.kernels[0]);
  const SmemLayout b = plan_smem(m128.kernels[0]);
  REQUIRE(a.buffers.size() == b.buffers.size());
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    CHECK(a.buffers[i].offset == b.buffers[i].offset);
  }
  CHECK(a.total_bytes == b.total_bytes);
}

TEST_CASE("a buffer only_with checkpoints takes bytes only in plans with them", "[compiler][smem]") {
  json doc = test::minimal_schedule_json();
  doc["smem"]["buffers"].push_back(buffer("out", {2, 16, 128}, "bf16", "shared", {"project", "store"}));
  doc["smem"]["buffers"].push_back(buffer("tile", {64, 136}, "bf16", "shared", {"project", "store"}));
  doc["smem"]["buffers"].back()["only_with"] = "checkpoints";
  doc["smem"]["buffers"].push_back(buffer("bar", {3}, "u64", "shared", {"load", "store"}));
  const Schedule schedule = parse_schedule(doc, "test.json");
  const KernelDecl& kernel = schedule.kernels.at(0);
  const SmemLayout with = plan_smem(kernel, true);
  const SmemLayout without = plan_smem(kernel, false);
  CHECK(with.find("tile")->present);
  CHECK(with.find("tile")->offset == 8192);
  CHECK(with.find("tile")->bytes == 64 * 136 * 2);
  CHECK(with.find("bar")->offset == 8192 + 64 * 136 * 2);
  CHECK_FALSE(without.find("tile")->present);
  CHECK(without.find("tile")->bytes == 0);
  CHECK(without.find("tile")->offset == 0);
  CHECK(without.find("bar")->offset == 8192); // placed as if the tile were not declared
  CHECK(with.total_bytes - without.total_bytes == 64 * 136 * 2);
  CHECK(plan_smem(kernel).total_bytes == with.total_bytes); // validation plans every feature
}
