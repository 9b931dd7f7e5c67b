// Each family recipe says what its fragments address in SMEM (dtype, least
// shape, in multiples of the M tile and the pipeline stages): the shipped
// schedules hold it, and a buffer smaller than that is refused with its path.
#include "compiler/errors.hpp"
#include "compiler/lower.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/validated_schedule.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace kda;
using Catch::Contains;

namespace {

BufferDecl& buffer(Schedule& s, const std::string& kernel_role, const std::string& name) {
  for (KernelDecl& k : s.kernels) {
    if (std::string(to_string(k.role)) == kernel_role) {
      for (BufferDecl& b : k.smem.buffers) {
        if (b.name == name) {
          return b;
        }
      }
    }
  }
  FAIL("no buffer " << name << " in a " << kernel_role << " kernel");
  throw;
}

std::string problems(const Schedule& s, const char* target) {
  try {
    check_against_family(validate(s, *find_target(target)));
  } catch (const ScheduleError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("every shipped schedule declares what its fragments address", "[compiler][recipes]") {
  for (const Schedule& s : shipped_schedules()) {
    for (const std::string& t : s.targets) {
      INFO(s.name << " on " << t);
      CHECK(problems(s, t.c_str()).empty());
    }
  }
}

TEST_CASE("a buffer below its fragment's least shape or of another dtype is refused", "[compiler][recipes]") {
  SECTION("per M tile: the M128 output tiles declared for M64") {
    Schedule s = *find_shipped_schedule("sm100_m128_c32");
    buffer(s, "fused", "out").shape = {2, 32, 64};
    CHECK_THAT(problems(s, "sm_100a"),
               Contains("'out' is [2 x 32 x 64]; fragment tcgen05/fused_kernel reaches into [2 x 32 x 128] (m_tile 128"));
  }
  SECTION("per stage: three ring barriers for four stages") {
    Schedule s = *find_shipped_schedule("sm90_wgmma_c32");
    buffer(s, "recurrence", "full").shape = {3};
    CHECK_THAT(problems(s, "sm_90a"), Contains("/shape: 'full' is [3]; fragment wgmma/recurrence reaches into [4]"));
  }
  SECTION("rank and dtype") {
    Schedule s = *find_shipped_schedule("sm90_wgmma_c16");
    buffer(s, "prepare", "lmat").shape = {256};
    buffer(s, "prepare", "beta").dtype = DType::bf16;
    const std::string text = problems(s, "sm_90a");
    CHECK_THAT(text, Contains("'lmat' is [256]; fragment common/prepare_chunk reaches into [16 x 16]"));
    CHECK_THAT(text, Contains("/dtype: 'beta' is bf16; fragment common/prepare_chunk reads and writes it as fp32"));
  }
  SECTION("a wider pitch than the fragment's is fine") {
    Schedule s = *find_shipped_schedule("portable_c16");
    buffer(s, "recurrence", "v").shape = {16, 144};
    CHECK(problems(s, "sm_90").empty());
  }
}
