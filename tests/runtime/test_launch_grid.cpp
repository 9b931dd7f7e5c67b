// The grids the launcher gives each entry (runtime/prefill_call.hpp,
// grid_of), without a GPU: a persistent recurrence takes as many CTAs as can
// be resident on the device, never more than it has work items.
#include "compiler/schedule_fixtures.hpp"
#include "runtime/prefill_call.hpp"

#include <catch2/catch.hpp>

using namespace kda;

namespace {

ProblemShape packed(int sequences, std::int64_t tokens_each, int heads) {
  ProblemShape p;
  p.layout = LayoutKind::packed;
  p.batch = 1;
  p.num_seqs = sequences;
  p.total_tokens = sequences * tokens_each;
  p.seq_len = p.total_tokens;
  p.heads = heads;
  p.beta_token_stride = heads;
  return p;
}

const EntryPlan& entry(const KernelPlan& plan, KernelRole role) {
  for (const EntryPlan& e : plan.entries) {
    if (e.role == role) {
      return e;
    }
  }
  FAIL("no entry with that role");
  throw;
}

} // namespace

TEST_CASE("launch grid: a persistent recurrence takes min(work items, resident CTAs), the direct one a CTA per item",
          "[runtime][launch]") {
  const KernelPlan persistent = test::lower_shipped("sm90_wgmma_c16_persistent", "sm_90a", LayoutKind::packed);
  const EntryPlan& loop = entry(persistent, KernelRole::recurrence);
  // 1,024 sequences x 96 heads: 98,304 items on 132 SMs, one CTA each
  runtime::Dim3 g = grid_of(loop, packed(1024, 8, 96), persistent, 132);
  CHECK(g.x == 132);
  CHECK(g.y == 1);
  CHECK(g.z == 1);
  // fewer items than SMs: one CTA per item
  g = grid_of(loop, packed(3, 8, 4), persistent, 132);
  CHECK(g.x == 12);
  // a device of 78 SMs
  CHECK(grid_of(loop, packed(1024, 8, 96), persistent, 78).x == 78);
  // the prepare kernel's grid is the direct design's
  const KernelPlan direct = test::lower_shipped("sm90_wgmma_c16", "sm_90a", LayoutKind::packed);
  const runtime::Dim3 a = grid_of(entry(persistent, KernelRole::prepare), packed(1024, 8, 96), persistent, 132);
  const runtime::Dim3 b = grid_of(entry(direct, KernelRole::prepare), packed(1024, 8, 96), direct, 132);
  CHECK((a.x == b.x && a.y == b.y && a.z == b.z));
  // the direct recurrence: sequences x heads, whatever the SM count
  const runtime::Dim3 d = grid_of(entry(direct, KernelRole::recurrence), packed(1024, 8, 96), direct, 132);
  CHECK(d.x == 1024);
  CHECK(d.y == 96);
}

// The fused persistent design (wgmma/fused_persistent) forms each record in
// its ring slot: one kernel of 16 warps on the persistent grid, and a
// workspace that holds the sequence table but no records.
TEST_CASE("launch grid: the fused persistent design, one kernel on the persistent grid and no records in the workspace",
          "[runtime][launch]") {
  const KernelPlan fused = test::lower_shipped("sm90_wgmma_c16_fused", "sm_90a", LayoutKind::packed);
  const KernelPlan decomposed = test::lower_shipped("sm90_wgmma_c16_persistent", "sm_90a", LayoutKind::packed);
  const EntryPlan& kernel = entry(fused, KernelRole::fused);
  CHECK(kernel.launch.threads == 512);      // 8 MMA warps, a producer warpgroup, a prepare group of four
  CHECK(kernel.launch.entry_registers == 128); // 256 x 168 + 128 x 48 + 128 x 128 = the register file
  CHECK(grid_of(kernel, packed(1024, 8, 96), fused, 132).x == 132);
  CHECK(grid_of(kernel, packed(3, 8, 4), fused, 132).x == 12);
  for (const EntryPlan& e : fused.entries) {
    CHECK(e.role != KernelRole::prepare);
  }
  // the same record layout as the decomposed design, kept in SMEM
  CHECK(fused.workspace.record_bytes == decomposed.workspace.record_bytes);
  CHECK_FALSE(fused.workspace.records_in_workspace);
  CHECK(decomposed.workspace.records_in_workspace);
  const ProblemShape p = packed(1024, 8, 96);
  const std::int64_t records = (p.total_tokens / 16 + p.num_seqs) * p.heads * decomposed.workspace.record_bytes;
  CHECK(call_workspace_bytes(decomposed, p) - call_workspace_bytes(fused, p) == records);
  CHECK(call_workspace_bytes(fused, p) < records / 100); // the sequence table alone
}
