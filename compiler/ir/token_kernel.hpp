/// \file
/// The LLVM tier's token-recurrent kernel, written as NVVM IR with LLVM's
/// IRBuilder from a KernelPlan of the `token` family (no CUDA text): spec
/// section 1.3 token by token. One CTA of 128 threads per (sequence, head);
/// thread v keeps value row v of the fp32 state in registers. Per token: the
/// safe gate alpha = 2^(gate_scale sigmoid(exp(A_log) (g + dt_bias))), the L2
/// norms of q and k (fp32, eps 1e-6 inside the root), beta = sigmoid(logit),
/// then S~ = S diag(alpha), p = S~ k^, u = beta (v - p), S = S~ + u k^T,
/// o = scale S q^. One barrier per token (the token's q, k and alpha rows in
/// the plan's two-slot SMEM ring). Every product is an fp32 FMA.
///
/// The entry takes the plan's ArgAbi struct by value, as the CUDA entries
/// do, so the runtime launches it like any other: fixed and packed layouts
/// (int32 or int64 cu_seqlens), the state (fp32 or bf16, state_in read,
/// state_out written; either may be null) of slot n or of pool slot
/// state_indices[n] (state_slot_stride elements apart), seq_order (packed:
/// grid position x takes sequence seq_order[x]) and, in plans with
/// checkpoints, bf16 checkpoint rows (the state before every
/// checkpoint_chunks x 16 tokens, rows from checkpoint_starts[n]).
#pragma once

#include "compiler/kernel_plan.hpp"

#include <memory>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace kda::ir {

/// The module of `plan`'s token kernel (plan.token must be set: a
/// `token`-family plan; InternalError otherwise). Launched on a grid of
/// (N, H) CTAs of plan.token->threads threads with plan.token->dynamic_smem
/// bytes of dynamic SMEM.
std::unique_ptr<llvm::Module> emit_token_kernel(llvm::LLVMContext& context, const KernelPlan& plan);

} // namespace kda::ir
