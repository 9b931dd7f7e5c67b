// libFuzzer target: any bytes as a schedule file, parsed, validated against
// each target it lists (at most four) and checked against its family recipe,
// then lowered for the first. Every outcome must be a result or a
// ScheduleError: a crash, a sanitizer report, a hang or any other exception
// is a finding. Seed corpus: the shipped schedules and tests/schedules/bad.
#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const kda::Schedule schedule = kda::parse_schedule_text(text, "fuzz.json");
    int checked = 0;
    for (const std::string& name : schedule.targets) {
      const std::optional<kda::Target> target = kda::find_target(name);
      if (!target || checked++ == 4) {
        continue;
      }
      try {
        const kda::ValidatedSchedule v = kda::validate(schedule, *target);
        kda::check_against_family(v);
        if (checked == 1) {
          kda::lower(v, kda::ShapeKey{});
        }
      } catch (const kda::ScheduleError&) {
        // a refused schedule: the expected outcome for most inputs
      }
    }
  } catch (const kda::ScheduleError&) {
  }
  return 0;
}
