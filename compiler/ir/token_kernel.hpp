/// \file
/// The LLVM tier's token-recurrent kernel, written as NVVM IR with LLVM's
/// IRBuilder (no CUDA text): spec section 1.3 token by token. One CTA of 128
/// threads per (sequence, head); thread v keeps value row v of the fp32 state
/// in registers. Per token: the safe gate alpha = exp(lb sigmoid(exp(A_log)
/// (g + dt_bias))), the L2 norms of q and k (fp32, eps 1e-6 inside the root),
/// beta = sigmoid(logit), then S~ = S diag(alpha), p = S~ k^, u = beta (v - p),
/// S = S~ + u k^T, o = scale S q^. One barrier per token (the token's q, k and
/// alpha rows double-buffered in SMEM). Every product is an fp32 FMA.
///
/// This first version covers the fixed and packed layouts and an fp32 or bf16
/// state updated in place (or none); pools, checkpoints and seq_order are not
/// emitted yet, and the kernel is not a schedule the router can pick.
#pragma once

#include "compiler/shape_key.hpp"

#include <memory>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace kda::ir {

struct TokenKernelConfig {
  LayoutKind layout = LayoutKind::fixed;
  StatePrecision state = StatePrecision::bf16; ///< the state tensor in memory
  bool fp32_output = false; ///< outputs stored as fp32 (the GPU oracle) instead of bf16
};

inline constexpr const char* k_token_kernel_entry = "kda_token_prefill";
inline constexpr int k_token_kernel_threads = 128;

/// The kernel `kda_token_prefill`, launched on a grid of (N, H) CTAs of 128
/// threads, no dynamic SMEM. Its parameters, in order (pointers are global;
/// token rows are [tokens][H][128]):
///   q, k, v, g      bf16 rows
///   beta            bf16 [tokens][beta_token_stride], head h at column h
///   a_log           fp32 [H]
///   dt_bias         fp32 [H][128], or null (zero)
///   out             bf16 rows (fp32 with fp32_output)
///   state           the config's dtype [N][H][128][128] (value row, key
///                   column), read and written in place; null: zeros, not written
///   cu_seqlens      packed: int32 or int64 [N + 1] (offsets_i64); fixed: unused
///   seq_len         i64: fixed: tokens per sequence (sequence n at n seq_len)
///   beta_token_stride i64
///   heads           i32
///   offsets_i64     i32: cu_seqlens is int64
///   scale           f32
///   lower_bound     f32: the natural-log lower bound of the per-token log decay (< 0)
std::unique_ptr<llvm::Module> emit_token_kernel(llvm::LLVMContext& context, const TokenKernelConfig& config);

} // namespace kda::ir
