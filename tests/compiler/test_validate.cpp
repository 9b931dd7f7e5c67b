#include "compiler/errors.hpp"
#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using Catch::Contains;
using nlohmann::json;

TEST_CASE("a minimal schedule validates on the targets it lists", "[compiler][validate]") {
  const Schedule s = parse_schedule(test::minimal_schedule_json(), "minimal.json");
  const ValidatedSchedule v = validate(s, test::target_named("sm_90"));
  CHECK(v.target().name == "sm_90");
  CHECK(v.kernels().size() == 1);
  CHECK(v.tmem().allocated_columns == 0);
  CHECK(v.safe_lower_bound_magnitude() == Approx(5.4585).epsilon(1e-4));
  CHECK_NOTHROW(validate(s, test::target_named("sm_80")));
  CHECK_THROWS_WITH(validate(s, test::target_named("sm_120a")),
                    Contains("/targets: the schedule does not list target sm_120a (it lists: sm_90, sm_80)"));
}

TEST_CASE("overlapping live buffers are reported with phase and bytes", "[compiler][validate]") {
  json doc = test::minimal_schedule_json();
  doc["smem"]["buffers"][1]["offset"] = 0;
  doc["smem"]["buffers"][1]["lifetime"] = {"mqk", "project"};
  doc["smem"]["buffers"][0]["lifetime"] = {"load", "project"};
  CHECK_THAT(test::validation_problems(doc, "sm_90"),
             Contains("/smem/buffers/1: 'kd' overlaps live buffer 'q_raw' in phase 'mqk' (bytes 0..4095)"));
}

TEST_CASE("half-open lifetimes let a buffer take bytes read for the last time in its first phase",
          "[compiler][validate]") {
  json doc = test::minimal_schedule_json();
  doc["smem"]["buffers"][1]["alias"] = "q_raw"; // q_raw [load, center), kd [center, project)
  CHECK(test::validation_problems(doc, "sm_90").empty());
  doc["smem"]["buffers"][0]["lifetime"] = {"load", "mqk"};
  CHECK_THAT(test::validation_problems(doc, "sm_90"),
             Contains("'kd' overlaps live buffer 'q_raw' in phase 'center' (bytes 0..4095)"));
}

TEST_CASE("validation reports all problems at once", "[compiler][validate]") {
  json doc = test::minimal_schedule_json();
  doc["chunk_size"] = 48;
  doc["warp_roles"][0]["warps"] = 40;
  doc["smem"]["buffers"][1]["lifetime"] = {"store", "load"};
  doc["smem"]["buffers"][0]["alignment"] = 3;
  doc["eligibility"]["lower_bound"] = {{"min", -1.0}, {"max", -2.0}};
  const std::string problems = test::validation_problems(doc, "sm_90");
  CHECK_THAT(problems, Contains("/chunk_size: chunk_size 48 is not one of 16, 32, 64"));
  CHECK_THAT(problems, Contains("/warp_roles: 41 warps (1,312 threads) exceed"));
  CHECK_THAT(problems, Contains("/smem/buffers/1/lifetime: lifetime ['store', 'load') is empty"));
  CHECK_THAT(problems, Contains("/smem/buffers/0/alignment: alignment 3 of 'q_raw' must be a power of two"));
  CHECK_THAT(problems, Contains("/eligibility/lower_bound: lower_bound range [-1, -2) must satisfy min < max <= 0"));
}

TEST_CASE("TMEM allocation is the next power of two of at least 32 columns", "[compiler][validate][tmem]") {
  CHECK(tmem_allocation_columns(0) == 0);
  CHECK(tmem_allocation_columns(1) == 32);
  CHECK(tmem_allocation_columns(32) == 32);
  CHECK(tmem_allocation_columns(33) == 64);
  CHECK(tmem_allocation_columns(240) == 256);
  CHECK(tmem_allocation_columns(256) == 256);
  CHECK(tmem_allocation_columns(257) == 512);
  CHECK(tmem_allocation_columns(512) == 512);

  json doc = test::shipped_schedule_json("sm100_m128_c32");
  doc["tmem_columns"] = 513;
  CHECK_THAT(test::validation_problems(doc, "sm_100a"),
             Contains("/tmem_columns: 513 TMEM columns used exceeds the 512 columns of tensor memory"));
  doc["tmem_columns"] = 64;
  CHECK_THAT(test::validation_problems(doc, "sm_100a"), Contains("needs 128 TMEM columns, but only 64 are declared"));
}

TEST_CASE("the lower_bound range must be one the exponent math makes safe", "[compiler][validate]") {
  json doc = test::shipped_schedule_json("sm100_m128_c32");
  doc["eligibility"]["lower_bound"]["min"] = -5.45;
  CHECK(test::validation_problems(doc, "sm_100a").empty());
  doc["eligibility"]["lower_bound"]["min"] = -5.46;
  CHECK_THAT(test::validation_problems(doc, "sm_100a"),
             Contains("/eligibility/lower_bound/min: lower_bound -5.46 is not safe in BF16 for chunk 32 with the "
                      "lower_bound anchor"));
  doc["eligibility"]["lower_bound"]["min"] = -5.0;
  doc["exponent_anchor"] = "none";
  CHECK_THAT(test::validation_problems(doc, "sm_100a"), Contains("|lower_bound| < 2.7293"));
}

TEST_CASE("register targets per role must fit the register file at launch, after rounding", "[compiler][validate]") {
  // 20 warps: the entry count is the roles' total over 640 threads rounded
  // up to 8, so a total under 65,536 may still not launch
  json doc = test::shipped_schedule_json("sm90_wgmma_c16_fused");
  for (json& role : doc["warp_roles"]) {
    if (role["name"] == "mma") {
      role["registers"] = 160;
    } else if (role["name"] == "producer") {
      role["registers"] = 72;
    } else {
      role["warps"] = 8;
      role["registers"] = 56;
    }
  }
  // 8*32*160 + 4*32*72 + 8*32*56 = 40,960 + 9,216 + 14,336 = 64,512: 100.8 -> 104 per thread, 66,560 in all
  CHECK_THAT(test::validation_problems(doc, "sm_90a"),
             Contains("/warp_roles: roles request 64,512 registers in total: over 640 threads that is 104 per thread "
                      "(rounded up to a multiple of 8) at launch, 66,560 in all, more than the 65,536 of one SM; at "
                      "most 96 per thread (61,440 in total) fit"));
  doc["warp_roles"][0]["registers"] = 144; // 60,416: 96 per thread
  CHECK(test::validation_problems(doc, "sm_90a").empty());
}

TEST_CASE("register targets per role are checked against the register file", "[compiler][validate]") {
  json doc = test::shipped_schedule_json("sm100_m128_c32");
  doc["warp_roles"][4]["registers"] = 96;
  doc["warp_roles"][0]["registers"] = 232;
  doc["warp_roles"][1]["registers"] = 232;
  doc["warp_roles"][2]["registers"] = 40;
  doc["warp_roles"][3]["registers"] = 40;
  // 20*32*96 + 8*32*232 + 2*32*40 = 61,440 + 59,392 + 2,560 = 123,392 > 65,536
  CHECK_THAT(test::validation_problems(doc, "sm_100a"),
             Contains("/warp_roles: roles request 123,392 registers in total, more than the 65,536 of one SM"));
  doc["warp_roles"][4]["registers"] = 50;
  CHECK_THAT(test::validation_problems(doc, "sm_100a"),
             Contains("/warp_roles/4/registers: 50 registers: setmaxnreg takes a multiple of 8 in 24..256"));
}
