// Calls whose prepare kernel runs beside the recurrence (schedule
// prepare_overlap, runtime/prepare_overlap.hpp) issued from two streams at
// once, and beside a long call that does not overlap: every call finishes (no
// recurrence waits on a prepare kernel that cannot get an SM) and gives the
// same bits as the same call run alone with the kernels one after the other.
#include "device_problem.hpp"

#include <catch2/catch.hpp>

using namespace kda;
using namespace kda::test;

namespace {

std::vector<std::uint8_t> run_alone(DeviceProblem& p, const PrefillOptions& options) {
  p.reset();
  PrefillOptions apart = options;
  apart.prepare_overlap = false;
  const PrefillResult r = recurrent_kda_prefill(p.args(nullptr), apart);
  CHECK_FALSE(r.prepare_overlapped);
  KDA_CU(cuCtxSynchronize);
  return p.result();
}

} // namespace

TEST_CASE("gpu overlap: overlapped calls on two streams at once, and beside a long call", "[gpu][prefill][overlap]") {
  PrefillOptions options;
  options.schedule = "sm90_wgmma_c32";
  // 96 and 24 pairs (one wave each, overlapped); 768 pairs (many waves, not overlapped)
  DeviceProblem a(1, 4096, 96, 71);
  DeviceProblem b(2, 2048, 12, 72);
  DeviceProblem c(8, 1024, 96, 73);
  const std::vector<std::uint8_t> a_alone = run_alone(a, options);
  const std::vector<std::uint8_t> b_alone = run_alone(b, options);
  const std::vector<std::uint8_t> c_alone = run_alone(c, options);

  Stream s1, s2, s3;
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    a.reset();
    b.reset();
    c.reset();
    KDA_CU(cuCtxSynchronize);
    // round 0: a and b together; round 1: b, then a; round 2: a and b beside c
    if (round == 2) {
      CHECK_FALSE(recurrent_kda_prefill(c.args(s3.s), options).prepare_overlapped);
    }
    const PrefillResult first = round == 1 ? recurrent_kda_prefill(b.args(s2.s), options)
                                           : recurrent_kda_prefill(a.args(s1.s), options);
    const PrefillResult second = round == 1 ? recurrent_kda_prefill(a.args(s1.s), options)
                                            : recurrent_kda_prefill(b.args(s2.s), options);
    CHECK(first.prepare_overlapped);
    CHECK(second.prepare_overlapped);
    KDA_CU(cuCtxSynchronize);
    CHECK(a.result() == a_alone);
    CHECK(b.result() == b_alone);
    if (round == 2) {
      CHECK(c.result() == c_alone);
    }
  }
}
