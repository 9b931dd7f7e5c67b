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
  // pairs: 96, 576, 768, 64, 384, 512 (standard); 16, 256, 8, 64 (small cases)
  CHECK(names(workloads_in_class(ShapeClass::few, 132, 32768)) ==
        std::vector<std::string>{"h64_fixed_8192", "h16_fixed_32768", "h8_fixed_2048"});
  CHECK(names(workloads_in_class(ShapeClass::one_wave, 132, 32768)) == std::vector<std::string>{"h96_fixed_8192"});
  CHECK(names(workloads_in_class(ShapeClass::two_waves, 132, 32768)) ==
        std::vector<std::string>{"h32_uniform_8x4096"});
  CHECK(names(workloads_in_class(ShapeClass::many, 132, 32768)) ==
        std::vector<std::string>{"h96_mixed", "h96_uniform_8x1024", "h64_mixed", "h64_uniform_8x1024"});
  // the token bound keeps H64 fixed 65536 out of a tune; without it it is "few"
  CHECK(names(workloads_in_class(ShapeClass::few, 132, 65536)).size() == 4);
  // every workload lands in exactly one class
  std::size_t total = 0;
  for (ShapeClass c : {ShapeClass::few, ShapeClass::one_wave, ShapeClass::two_waves, ShapeClass::many}) {
    total += workloads_in_class(c, 132, 1 << 30).size();
  }
  CHECK(total == bench_workloads().size());
}
