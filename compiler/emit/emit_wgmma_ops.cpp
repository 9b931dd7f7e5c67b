#include "compiler/emit/emit_cuda.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {
namespace {

// One wrapper: the accumulator fragment d[j][e] is column tile j (8 columns)
// of the warpgroup's 64 x N result, element e as in mma.sync m16n8k16 (PTX ISA
// 9.7.15.5.2 "Register Fragments": row 16 (warp % 4) + g + 8 (e / 2), column
// 8 j + 2 t + e % 2); the A fragment is the m16n8k16 A fragment of the warp's
// 16 rows.
void emit_wrapper(int n, SourceWriter& out) {
  if (n < 8 || n > 256 || n % 8 != 0) {
    throw InternalError(fmt::format("wgmma m64n{}k16: N must be a multiple of 8 in 8..256", n));
  }
  const int regs = n / 2;
  std::string d_list;
  for (int i = 0; i < regs; ++i) {
    d_list += fmt::format("{}%{}", i == 0 ? "" : ", ", i);
  }
  out.blank();
  out.line(fmt::format("// D[64 x {0}] (+)= A[64 x 16] (registers) B[16 x {0}] (K-major SMEM descriptor), bf16 -> fp32.", n));
  out.open(fmt::format("__device__ __forceinline__ void wgmma_m64n{0}k16_rs(float (&d)[{1}][4], const u32 (&a)[4], u64 b_desc, "
                       "int accumulate)",
                       n, n / 8));
  out.line("asm volatile(");
  out.line("    \"{\\n.reg .pred acc;\\n\"");
  out.line(fmt::format("    \"setp.ne.b32 acc, %{}, 0;\\n\"", regs + 5));
  out.line(fmt::format("    \"wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16 {{{}}}, {{%{}, %{}, %{}, %{}}}, %{}, acc, 1, 1, 0;\\n}}\\n\"",
                       n, d_list, regs, regs + 1, regs + 2, regs + 3, regs + 4));
  std::string outputs = "    : ";
  for (int i = 0; i < regs; ++i) {
    outputs += fmt::format("{}\"+f\"(d[{}][{}])", i % 8 == 0 ? "" : ", ", i / 4, i % 4);
    if (i % 8 == 7 && i + 1 < regs) {
      out.line(outputs + ",");
      outputs = "      ";
    }
  }
  out.line(outputs);
  out.line("    : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b_desc), \"r\"(accumulate)");
  out.line("    : \"memory\");");
  out.close();
  out.line(fmt::format("// The same under the name shared by every N (chosen by the accumulator's extent, {} tiles).", n / 8));
  out.open(fmt::format("__device__ __forceinline__ void wgmma_m64k16_rs(float (&d)[{}][4], const u32 (&a)[4], u64 b_desc, "
                       "int accumulate)",
                       n / 8));
  out.line(fmt::format("wgmma_m64n{}k16_rs(d, a, b_desc, accumulate);", n));
  out.close();
}

} // namespace

void emit_wgmma_ops(const KernelPlan& plan, SourceWriter& out) {
  if (plan.wgmma_n.empty()) {
    return;
  }
  out.blank();
  out.open("namespace kda");
  out.line("// wgmma with A in registers (PTX ISA 9.7.15.5 wgmma.mma_async, sm_90a), written by the emitter");
  out.line("// from the plan's shapes; fence / commit / wait are in fragment wgmma/async.");
  for (int n : plan.wgmma_n) {
    emit_wrapper(n, out);
  }
  out.close(" // namespace kda");
}

} // namespace kda
