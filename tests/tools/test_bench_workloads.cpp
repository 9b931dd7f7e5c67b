// The bench workloads by shape class: what `kdajit tune` times for each class.
#include "tools/bench_workloads.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace kda;
using namespace kda::tools;

namespace {

std::vector<std::string> names(const std::vector<const BenchWorkload*>& workloads) {
  std::vector<std::string> out;
  for (const BenchWorkload* w : workloads) {
    out.push_back(w->name);
  }
  return out;
}

} // namespace

TEST_CASE("bench workloads: the shape classes of an H200 (132 SMs)", "[tools][bench]") {
  // pairs: 96, 576, 768, 64, 384, 512 (standard); 16, 256, 8, 64 (small
  // cases); 98,304, 8,192 and 32,768 (the short-sequence cases, 8, 64 and
  // 16 tokens each)
  CHECK(names(workloads_in_class(ShapeClass::few, 132, 32768)) ==
        std::vector<std::string>{"h64_fixed_8192", "h16_fixed_32768", "h8_fixed_2048"});
  CHECK(names(workloads_in_class(ShapeClass::one_wave, 132, 32768)) == std::vector<std::string>{"h96_fixed_8192"});
  CHECK(names(workloads_in_class(ShapeClass::two_waves, 132, 32768)) ==
        std::vector<std::string>{"h32_uniform_8x4096"});
  CHECK(names(workloads_in_class(ShapeClass::many, 132, 32768)) ==
        std::vector<std::string>{"h96_mixed", "h96_uniform_8x1024", "h64_mixed", "h64_uniform_8x1024"});
  CHECK(names(workloads_in_class(ShapeClass::many_short, 132, 32768)) ==
        std::vector<std::string>{"h32_packed_256x64", "h32_packed_1024x16"});
  CHECK(names(workloads_in_class(ShapeClass::many_tiny, 132, 32768)) == std::vector<std::string>{"h96_packed_1024x8"});
  CHECK(workloads_in_class(ShapeClass::few_short, 132, 32768).empty());
  CHECK(workloads_in_class(ShapeClass::few_tiny, 132, 32768).empty());
  // the token bound keeps H64 fixed 65536 out of a tune; without it it is "few"
  CHECK(names(workloads_in_class(ShapeClass::few, 132, 65536)).size() == 4);
  // every workload lands in exactly one class
  std::size_t total = 0;
  for (ShapeClass c : all_shape_classes()) {
    total += workloads_in_class(c, 132, 1 << 30).size();
  }
  CHECK(total == bench_workloads().size());
}

TEST_CASE("bench workloads: the short-sequence cases and their floors", "[tools][bench]") {
  const BenchWorkload* short8 = nullptr;
  const BenchWorkload* short64 = nullptr;
  for (const BenchWorkload& w : bench_workloads()) {
    short8 = w.name == "h96_packed_1024x8" ? &w : short8;
    short64 = w.name == "h32_packed_256x64" ? &w : short64;
  }
  REQUIRE(short8 != nullptr);
  REQUIRE(short64 != nullptr);
  CHECK(short8->seqlens == std::vector<std::int64_t>(1024, 8));
  CHECK(short64->seqlens == std::vector<std::int64_t>(256, 64));
  CHECK_FALSE(short8->standard);
  CHECK(short8->fla_ms == 0.0); // no FLA figure: bench prints "-"
  // the memory floors of ../shared/bench/peers-h200.md: 1.733 and 0.282 ms at 4.3 TB/s
  CHECK(static_cast<double>(minimal_bytes(*short8)) / k_h200_copy_bandwidth * 1e3 == Approx(1.733).epsilon(0.002));
  CHECK(static_cast<double>(minimal_bytes(*short64)) / k_h200_copy_bandwidth * 1e3 == Approx(0.282).epsilon(0.003));
  // without a state (bench --no-state) the tokens' bytes only: 1,024 x 8 tokens x 96 heads x 1,282 B and the
  // head parameters; the states' 6.44 GB are gone
  CHECK(minimal_bytes(*short8, false) == 1024 * 8 * 96 * 1282 + 96 * (4 + 128 * 4));
  CHECK(minimal_bytes(*short8) - minimal_bytes(*short8, false) == std::int64_t{1024} * 96 * 2 * 128 * 128 * 2);
  // the middle of many_short: 1,024 x 16 tokens, H32, no peer figure (bench prints "-")
  const BenchWorkload* short16 = nullptr;
  for (const BenchWorkload& w : bench_workloads()) {
    short16 = w.name == "h32_packed_1024x16" ? &w : short16;
  }
  REQUIRE(short16 != nullptr);
  CHECK(short16->seqlens == std::vector<std::int64_t>(1024, 16));
  CHECK(short16->flashkda_ms == 0.0);
  CHECK(short16->fla_ms == 0.0);
  CHECK(shape_class(1024 * 32, 132, average_tokens(16 * 1024, 1024)) == ShapeClass::many_short);
  // 32,768 bf16 states of 32 KiB read and written (2.15 GB) and 16,384 tokens x 32 heads (0.67 GB): 0.656 ms
  CHECK(static_cast<double>(minimal_bytes(*short16)) / k_h200_copy_bandwidth * 1e3 == Approx(0.656).epsilon(0.002));
}

TEST_CASE("bench workloads: checkpoint rows' bytes", "[tools][bench]") {
  auto find = [](const std::string& name) {
    const BenchWorkload* found = nullptr;
    for (const BenchWorkload& w : bench_workloads()) {
      found = w.name == name ? &w : found;
    }
    REQUIRE(found != nullptr);
    return *found;
  };
  constexpr std::int64_t row = 128 * 128 * 2; // one bf16 state
  // 8 sequences of 1,024 tokens, 96 heads, a row every 64 tokens: 16 rows each
  CHECK(checkpoint_bytes(find("h96_uniform_8x1024"), 64) == 8 * 16 * 96 * row);
  // mixed lengths round up per sequence: 1300 547 2048 963 271 3063 -> 21 9 32 16 5 48
  CHECK(checkpoint_bytes(find("h64_mixed"), 64) == (21 + 9 + 32 + 16 + 5 + 48) * 64 * row);
  // a sequence shorter than the interval has its row 0 (the initial state)
  CHECK(checkpoint_bytes(find("h96_packed_1024x8"), 64) == 1024 * 96 * row);
  CHECK(checkpoint_bytes(find("h16_fixed_32768"), 32) == 1024 * 16 * row);
}
