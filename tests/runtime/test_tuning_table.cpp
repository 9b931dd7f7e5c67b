#include "compiler/schedule_library.hpp"
#include "runtime/router.hpp"
#include "runtime/tuning_table.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kda;
using Catch::Contains;

namespace {

DeviceDescription h200() {
  DeviceDescription d;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  return d;
}

ProblemShape problem(int sequences, int heads) {
  ProblemShape p;
  p.layout = LayoutKind::fixed;
  p.num_seqs = sequences;
  p.batch = sequences;
  p.seq_len = 1024;
  p.total_tokens = p.batch * p.seq_len;
  p.heads = heads;
  p.state_in = p.state_out = true;
  return p;
}

ProblemShape short_problem(int sequences, int heads, std::int64_t tokens_each) {
  ProblemShape p = problem(sequences, heads);
  p.seq_len = tokens_each;
  p.total_tokens = p.batch * p.seq_len;
  return p;
}

} // namespace

TEST_CASE("shape classes follow how the (sequence x head) pairs fill the SMs", "[runtime][tuning]") {
  CHECK(shape_class(8, 132, 1024) == ShapeClass::few);
  CHECK(shape_class(66, 132, 1024) == ShapeClass::few);
  CHECK(shape_class(67, 132, 1024) == ShapeClass::one_wave);
  CHECK(shape_class(132, 132, 1024) == ShapeClass::one_wave);
  CHECK(shape_class(133, 132, 1024) == ShapeClass::two_waves);
  CHECK(shape_class(264, 132, 1024) == ShapeClass::two_waves);
  CHECK(shape_class(265, 132, 1024) == ShapeClass::many);
  // 1,024 x 8 and 8 x 1,024 tokens at H96: the same tokens, other classes
  CHECK(shape_class(1024 * 96, 132, average_tokens(8192, 1024)) == ShapeClass::many_tiny);
  CHECK(shape_class(265, 132, k_tiny_sequence_tokens) == ShapeClass::many_tiny);
  CHECK(shape_class(265, 132, k_tiny_sequence_tokens + 1) == ShapeClass::many_short);
  CHECK(shape_class(100, 132, 1) == ShapeClass::one_wave_tiny);
  CHECK(shape_class(8 * 96, 132, average_tokens(8192, 8)) == ShapeClass::many);
  CHECK(shape_class(265, 132, k_short_sequence_tokens) == ShapeClass::many_short);
  CHECK(shape_class(265, 132, k_short_sequence_tokens + 1) == ShapeClass::many);
  CHECK(shape_class(8, 132, 16) == ShapeClass::few_short);
  CHECK(average_tokens(100, 0) == 0);
  for (ShapeClass c : all_shape_classes()) {
    const std::string_view name = to_string(c);
    CHECK(short_sequences(c) ==
          (name.find("_short") != std::string_view::npos || name.find("_tiny") != std::string_view::npos));
    CHECK_FALSE(short_sequences(longer_sequence_class(longer_sequence_class(c))));
    CHECK_FALSE(short_sequences(long_sequence_class(c)));
  }
  CHECK(long_sequence_class(ShapeClass::two_waves_short) == ShapeClass::two_waves);
  CHECK(long_sequence_class(ShapeClass::two_waves_tiny) == ShapeClass::two_waves);
  CHECK(longer_sequence_class(ShapeClass::many_tiny) == ShapeClass::many_short);
  CHECK(longer_sequence_class(ShapeClass::many_short) == ShapeClass::many);
  CHECK(longer_sequence_class(ShapeClass::many) == ShapeClass::many);
  CHECK(all_shape_classes().size() == 12);
  CHECK(tuning_device_key(9, 0, 132) == "cc9.0-sm132");
}

TEST_CASE("the tuning table round-trips through its file and rejects other formats", "[runtime][tuning]") {
  TuningTable t;
  t.set("cc9.0-sm132", ShapeClass::one_wave, "portable_c16_w8");
  t.set("cc9.0-sm132", ShapeClass::many, "portable_c16");
  const std::string path =
      (std::filesystem::temp_directory_path() / ("kdajit-tune-test-" + std::to_string(getpid()) + ".json")).string();
  t.save(path);
  const TuningTable back = TuningTable::load(path);
  CHECK(back.lookup("cc9.0-sm132", ShapeClass::one_wave) == std::optional<std::string>("portable_c16_w8"));
  CHECK(back.lookup("cc9.0-sm132", ShapeClass::many) == std::optional<std::string>("portable_c16"));
  CHECK_FALSE(back.lookup("cc9.0-sm132", ShapeClass::few).has_value());
  CHECK_FALSE(back.lookup("cc10.0-sm148", ShapeClass::many).has_value());
  std::filesystem::remove(path);
  CHECK(TuningTable::load(path).empty()); // missing file: empty table
  CHECK_FALSE(TuningTable::from_json({{"format_version", 2}, {"devices", nlohmann::json::object()}}).has_value());
  CHECK_FALSE(TuningTable::from_json({{"format_version", 1}, {"devices", {{"cc9.0-sm132", {{"huge", "x"}}}}}})
                  .has_value());
}

TEST_CASE("routing follows the tuning table among eligible schedules", "[runtime][tuning][router]") {
  TuningTable t;
  t.set("cc9.0-sm132", ShapeClass::one_wave, "portable_c16_w8");
  t.set("cc9.0-sm132", ShapeClass::many, "sm100_m128_c32"); // not eligible on CC 9.0
  RouteRequest request;
  request.tuning = &t;
  const RouteDecision one_wave = route(shipped_schedules(), h200(), problem(1, 96), request);
  CHECK(one_wave.schedule->name == "portable_c16_w8");
  CHECK_THAT(one_wave.explanation, Contains("tuning table: portable_c16_w8 for cc9.0-sm132 / one_wave"));
  const RouteDecision many = route(shipped_schedules(), h200(), problem(8, 96), request);
  CHECK(many.schedule->name == "sm90_wgmma_c32"); // the static preference
  CHECK_THAT(many.explanation, Contains("tuning table names sm100_m128_c32 for cc9.0-sm132 / many, which is not "
                                        "eligible here; static preference: sm90_wgmma_c32"));
  const RouteDecision few = route(shipped_schedules(), h200(), problem(1, 8), request);
  CHECK(few.schedule->name == "sm90_wgmma_c32");
  CHECK_THAT(few.explanation, Contains("no entry for CC 9.0 / few; static preference: sm90_wgmma_c32"));
  // Short sequences (at most 64 tokens on average): the class's own entry
  // where measured, else the same fill's entry for longer sequences, labelled.
  const RouteDecision borrowed_short = route(shipped_schedules(), h200(), short_problem(1, 96, 8), request);
  CHECK(borrowed_short.schedule->name == "portable_c16_w8");
  CHECK_THAT(borrowed_short.explanation,
             Contains("tuning table: portable_c16_w8 for cc9.0-sm132 / one_wave (no one_wave_tiny or one_wave_short entry)"));
  t.set("cc9.0-sm132", ShapeClass::one_wave_short, "portable_c16_m64");
  const RouteDecision measured_short = route(shipped_schedules(), h200(), short_problem(1, 96, 64), request);
  CHECK(measured_short.schedule->name == "portable_c16_m64");
  CHECK_THAT(measured_short.explanation, Contains("tuning table: portable_c16_m64 for cc9.0-sm132 / one_wave_short\n"));
  CHECK(route(shipped_schedules(), h200(), short_problem(1, 96, 65), request).schedule->name == "portable_c16_w8");
  const RouteDecision few_short = route(shipped_schedules(), h200(), short_problem(1, 8, 8), request);
  CHECK_THAT(few_short.explanation, Contains("no entry for CC 9.0 / few_tiny (nor few_short, few); static preference"));
  // An explicit request wins over the table.
  RouteRequest forced = request;
  forced.schedule = "portable_c16";
  CHECK(route(shipped_schedules(), h200(), problem(1, 96), forced).schedule->name == "portable_c16");
}

TEST_CASE("the shipped tuning tables name shipped schedules and sit under local entries", "[runtime][tuning]") {
  const TuningTable& shipped = TuningTable::shipped();
  REQUIRE_FALSE(shipped.empty());
  for (ShapeClass c : {ShapeClass::few, ShapeClass::one_wave, ShapeClass::two_waves, ShapeClass::many}) {
    const std::optional<std::string> name = shipped.lookup("cc9.0-sm132", c);
    REQUIRE(name);
    CHECK(find_shipped_schedule(*name) != nullptr);
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / ("kdajit-tune-local-" + std::to_string(getpid()) + ".json")).string();
  TuningTable local;
  local.set("cc9.0-sm132", ShapeClass::many, "portable_c16");
  local.save(path);
  const TuningTable routing = routing_tuning_table(path);
  CHECK(routing.lookup("cc9.0-sm132", ShapeClass::many) == "portable_c16");                    // local wins
  CHECK(routing.lookup("cc9.0-sm132", ShapeClass::few) == shipped.lookup("cc9.0-sm132", ShapeClass::few)); // shipped fills
  CHECK(routing_tuning_table(std::nullopt).lookup("cc9.0-sm132", ShapeClass::one_wave) ==
        shipped.lookup("cc9.0-sm132", ShapeClass::one_wave));
  std::filesystem::remove(path);
}
