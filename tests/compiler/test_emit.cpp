#include "compiler/emit/emit_cuda.hpp"
#include "compiler/errors.hpp"
#include "compiler/emit/template_library.hpp"
#include "compiler/lower.hpp"
#include "compiler/validated_schedule.hpp"
#include "schedule_fixtures.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

using namespace kda;
using Catch::Contains;

namespace {

CudaSource emit_shipped(const std::string& name, const std::string& target, LayoutKind layout,
                        StatePrecision state = StatePrecision::bf16) {
  return emit_cuda(test::lower_shipped(name, target, layout, state));
}

} // namespace

TEST_CASE("every fragment of templates/ is embedded", "[compiler][emit]") {
  std::size_t on_disk = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test::source_path("templates"))) {
    if (entry.path().extension() == ".cuh") {
      ++on_disk;
      const std::string name =
          std::filesystem::relative(entry.path(), test::source_path("templates")).replace_extension("").string();
      CHECK(template_text(name) == test::read_text(entry.path().string()));
    }
  }
  CHECK(embedded_templates().size() == on_disk);
  CHECK_THROWS_AS(template_text("nope/missing"), InternalError);
}

TEST_CASE("emitted source has the plan header, the fragments and the entry points", "[compiler][emit]") {
  const CudaSource src = emit_shipped("portable_c16", "sm_90", LayoutKind::packed);
  CHECK(src.file_name == "kda_prefill_portable_c16.sm_90.d128.in_bf16.state_bf16.packed.cu");
  CHECK(src.entry_points == std::vector<std::string>{"kda_prefill_portable_c16_chunk_offsets",
                                                     "kda_prefill_portable_c16_prepare",
                                                     "kda_prefill_portable_c16_recurrence"});
  CHECK_THAT(src.text, Contains("constexpr int CHUNK_SIZE = 16;"));
  CHECK_THAT(src.text, Contains("constexpr int LAYOUT_PACKED = 1;"));
  CHECK_THAT(src.text, Contains("static_assert(sizeof(KdaParams) =="));
  CHECK_THAT(src.text, Contains("extern \"C\" __global__ void __launch_bounds__(128) kda_prefill_portable_c16_recurrence("));
  CHECK_THAT(src.text, Contains("// ---- fragment warp_mma/recurrence ----"));
  CHECK(src.text.find("#include") == std::string::npos); // compiles under NVRTC with no include path
  // The prologue precedes the plan header, which precedes the fragments that use it.
  CHECK(src.text.find("fragment common/prologue") < src.text.find("namespace kda_plan"));
  CHECK(src.text.find("namespace kda_plan") < src.text.find("fragment common/sequences"));
}

TEST_CASE("emission is deterministic across processes", "[compiler][emit]") {
  const std::string binary = KDAJIT_BINARY;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kdajit-emit-determinism";
  std::filesystem::create_directories(dir);
  const std::string a = (dir / "a.cu").string();
  const std::string b = (dir / "b.cu").string();
  const std::string args = " emit --schedule portable_c16 --target sm_120a --state fp32 --layout packed > ";
  REQUIRE(std::system((binary + args + a).c_str()) == 0);
  REQUIRE(std::system((binary + args + b).c_str()) == 0);
  const std::string first = test::read_text(a);
  CHECK(first.size() > 1000);
  CHECK(first == test::read_text(b));
  CHECK(first == emit_shipped("portable_c16", "sm_120a", LayoutKind::packed, StatePrecision::fp32).text);
  std::filesystem::remove_all(dir);
}
