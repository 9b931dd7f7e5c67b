// Each generatable shipped schedule has a golden hash of its generated source
// (tests/golden/source_hashes.json) for each target and the default shape key:
// the CUDA source, or for the llvm backend the LLVM IR.
// A change to templates/, the emitter or a schedule changes it; update the
// file deliberately (the failure prints the new value) and say why in the
// commit.
#include "cache/sha256.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/lower/family_recipe.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/tier0_codegen.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace kda;

TEST_CASE("generated sources match their golden hashes", "[compiler][emit][golden]") {
  const nlohmann::json golden = nlohmann::json::parse(test::read_text(test::source_path("tests/golden/source_hashes.json")));
  nlohmann::json current = nlohmann::json::object();
  for (const Schedule& s : shipped_schedules()) {
    try {
      find_family_recipe(s);
    } catch (const ScheduleError&) {
      continue;
    }
    for (const std::string& target : s.targets) {
      const KernelPlan plan = lower(validate(s, *find_target(target)), ShapeKey{});
      current[s.name][target] =
          cache::sha256_hex(plan.backend == Backend::llvm ? runtime::tier0_ir(plan).text : emit_cuda(plan).text);
    }
  }
  INFO("current hashes (copy into tests/golden/source_hashes.json when the change is deliberate):\n"
       << current.dump(2));
  CHECK(current == golden["sources"]);
}
