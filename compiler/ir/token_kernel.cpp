#include "compiler/ir/token_kernel.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <array>
#include <vector>

namespace kda::ir {
namespace {

constexpr int D = 128;       // head dim = value rows = threads
constexpr int k_warps = D / 32;
constexpr unsigned k_global = 1;
constexpr unsigned k_shared = 3;
constexpr double k_log2e = 1.4426950408889634;
constexpr float k_norm_eps = 1e-6F;

enum Param : unsigned {
  p_q, p_k, p_v, p_g, p_beta, p_a_log, p_dt_bias, p_out, p_state, p_cu_seqlens,
  p_seq_len, p_beta_stride, p_heads, p_offsets_i64, p_scale, p_lower_bound, k_params
};

using Values = std::vector<llvm::Value*>;

// The IR of one kernel: typed helpers over an IRBuilder positioned in it.
class TokenKernelWriter {
public:
  TokenKernelWriter(llvm::LLVMContext& context, const TokenKernelConfig& config)
      : m_context(context), m_config(config), m_module(std::make_unique<llvm::Module>(k_token_kernel_entry, context)),
        m_b(context) {}

  std::unique_ptr<llvm::Module> write();

private:
  llvm::Type* f32() { return m_b.getFloatTy(); }
  llvm::Type* i64() { return m_b.getInt64Ty(); }
  llvm::Value* f(float x) { return llvm::ConstantFP::get(f32(), x); }
  llvm::Value* arg(Param p) { return m_kernel->getArg(p); }

  void declare_kernel();
  void declare_shared();
  llvm::Value* sreg(llvm::Intrinsic::ID id) { return m_b.CreateZExt(m_b.CreateIntrinsic(id, {}, {}), i64()); }
  llvm::Value* exp(llvm::Value* x) {
    return m_b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {m_b.CreateFMul(x, f(k_log2e))});
  }
  llvm::Value* sigmoid(llvm::Value* x) { return m_b.CreateFDiv(f(1.0F), m_b.CreateFAdd(f(1.0F), exp(m_b.CreateFNeg(x)))); }
  llvm::Value* fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return m_b.CreateIntrinsic(llvm::Intrinsic::fma, {f32()}, {a, b, c});
  }
  llvm::Value* warp_sum(llvm::Value* x);
  llvm::Value* load_bf16(llvm::Value* base, llvm::Value* index);
  void store_bf16(llvm::Value* value, llvm::Value* base, llvm::Value* index);
  llvm::Value* load_f32(llvm::Value* base, llvm::Value* index) {
    return m_b.CreateLoad(f32(), m_b.CreateInBoundsGEP(f32(), base, index));
  }
  llvm::Value* shared_at(llvm::GlobalVariable* array, llvm::Value* index) {
    return m_b.CreateInBoundsGEP(array->getValueType(), array, {m_b.getInt64(0), index});
  }
  llvm::Value* null_test(Param p) { return m_b.CreateIsNull(arg(p)); }

  struct Span {
    llvm::Value* begin;
    llvm::Value* length;
  };
  Span sequence_span(llvm::Value* n);
  Values load_state(llvm::Value* row_base);
  void store_state(const Values& s, llvm::Value* row_base);
  Values token_step(const Values& s, llvm::Value* t, llvm::Value* begin, const std::array<llvm::Value*, 4>& per_cta);

  llvm::LLVMContext& m_context;
  TokenKernelConfig m_config;
  std::unique_ptr<llvm::Module> m_module;
  llvm::IRBuilder<> m_b;
  llvm::Function* m_kernel = nullptr;
  llvm::GlobalVariable* m_q = nullptr;     // [2][128] raw q of the token (fp32)
  llvm::GlobalVariable* m_k = nullptr;     // [2][128] raw k
  llvm::GlobalVariable* m_alpha = nullptr; // [2][128] per-key decay
  llvm::GlobalVariable* m_sums = nullptr;  // [2][warps][2] partial sums of q^2, k^2
  llvm::Value* m_thread = nullptr;         // v: value row, and the key column it loads
  llvm::Value* m_head = nullptr;
  llvm::Value* m_heads = nullptr;
};

void TokenKernelWriter::declare_kernel() {
  llvm::PointerType* global = llvm::PointerType::get(m_context, k_global);
  std::vector<llvm::Type*> params(p_seq_len, global);
  params.insert(params.end(), {i64(), i64(), m_b.getInt32Ty(), m_b.getInt32Ty(), f32(), f32()});
  m_kernel = llvm::Function::Create(llvm::FunctionType::get(m_b.getVoidTy(), params, false),
                                    llvm::Function::ExternalLinkage, k_token_kernel_entry, m_module.get());
  const char* names[k_params] = {"q",        "k",          "v",       "g",         "beta",        "a_log",
                                 "dt_bias",  "out",        "state",   "cu_seqlens", "seq_len",     "beta_token_stride",
                                 "heads",    "offsets_i64", "scale",  "lower_bound"};
  for (unsigned i = 0; i < k_params; ++i) {
    m_kernel->getArg(i)->setName(names[i]);
  }
  for (unsigned i : {p_q, p_k, p_v, p_g, p_beta, p_a_log, p_dt_bias, p_cu_seqlens}) {
    m_kernel->addParamAttr(i, llvm::Attribute::NoAlias);
    m_kernel->addParamAttr(i, llvm::Attribute::ReadOnly);
  }
  llvm::Metadata* kernel[] = {llvm::ValueAsMetadata::get(m_kernel), llvm::MDString::get(m_context, "kernel"),
                              llvm::ValueAsMetadata::get(m_b.getInt32(1))};
  llvm::Metadata* threads[] = {llvm::ValueAsMetadata::get(m_kernel), llvm::MDString::get(m_context, "maxntidx"),
                               llvm::ValueAsMetadata::get(m_b.getInt32(k_token_kernel_threads))};
  llvm::NamedMDNode* annotations = m_module->getOrInsertNamedMetadata("nvvm.annotations");
  annotations->addOperand(llvm::MDNode::get(m_context, kernel));
  annotations->addOperand(llvm::MDNode::get(m_context, threads));
}

void TokenKernelWriter::declare_shared() {
  auto array = [&](const char* name, int elements) {
    llvm::ArrayType* type = llvm::ArrayType::get(f32(), elements);
    auto* g = new llvm::GlobalVariable(*m_module, type, false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(type), name, nullptr,
                                       llvm::GlobalValue::NotThreadLocal, k_shared);
    g->setAlignment(llvm::Align(16));
    return g;
  };
  m_q = array("kda_token_q", 2 * D);
  m_k = array("kda_token_k", 2 * D);
  m_alpha = array("kda_token_alpha", 2 * D);
  m_sums = array("kda_token_sums", 2 * k_warps * 2);
}

// Butterfly sum over the warp: every lane ends with the same bits (each step
// adds the same two values, in either order).
llvm::Value* TokenKernelWriter::warp_sum(llvm::Value* x) {
  for (int offset = 16; offset >= 1; offset /= 2) {
    llvm::Value* other = m_b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {},
                                             {m_b.getInt32(0xffffffffU), x, m_b.getInt32(offset), m_b.getInt32(31)});
    x = m_b.CreateFAdd(x, other);
  }
  return x;
}

llvm::Value* TokenKernelWriter::load_bf16(llvm::Value* base, llvm::Value* index) {
  llvm::Value* bits = m_b.CreateLoad(m_b.getInt16Ty(), m_b.CreateInBoundsGEP(m_b.getInt16Ty(), base, index));
  return m_b.CreateBitCast(m_b.CreateShl(m_b.CreateZExt(bits, m_b.getInt32Ty()), 16), f32());
}

// Round to nearest even; NaN stays a quiet NaN.
void TokenKernelWriter::store_bf16(llvm::Value* value, llvm::Value* base, llvm::Value* index) {
  llvm::Value* bits = m_b.CreateBitCast(value, m_b.getInt32Ty());
  llvm::Value* lsb = m_b.CreateAnd(m_b.CreateLShr(bits, 16), 1);
  llvm::Value* rounded = m_b.CreateLShr(m_b.CreateAdd(bits, m_b.CreateAdd(lsb, m_b.getInt32(0x7fff))), 16);
  llvm::Value* nan = m_b.CreateFCmpUNO(value, value);
  llvm::Value* half = m_b.CreateSelect(nan, m_b.getInt16(0x7fc0), m_b.CreateTrunc(rounded, m_b.getInt16Ty()));
  m_b.CreateStore(half, m_b.CreateInBoundsGEP(m_b.getInt16Ty(), base, index));
}

// Sequence n's first token row and length: fixed n T and T, packed from
// cu_seqlens (int32 or int64).
TokenKernelWriter::Span TokenKernelWriter::sequence_span(llvm::Value* n) {
  if (m_config.layout == LayoutKind::fixed) {
    return {m_b.CreateMul(n, arg(p_seq_len)), arg(p_seq_len)};
  }
  llvm::BasicBlock* wide = llvm::BasicBlock::Create(m_context, "offsets_i64", m_kernel);
  llvm::BasicBlock* narrow = llvm::BasicBlock::Create(m_context, "offsets_i32", m_kernel);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(m_context, "span", m_kernel);
  m_b.CreateCondBr(m_b.CreateICmpNE(arg(p_offsets_i64), m_b.getInt32(0)), wide, narrow);
  m_b.SetInsertPoint(wide);
  llvm::Value* first64 = m_b.CreateLoad(i64(), m_b.CreateInBoundsGEP(i64(), arg(p_cu_seqlens), n));
  llvm::Value* last64 = m_b.CreateLoad(i64(), m_b.CreateInBoundsGEP(i64(), arg(p_cu_seqlens), m_b.CreateAdd(n, m_b.getInt64(1))));
  m_b.CreateBr(join);
  m_b.SetInsertPoint(narrow);
  llvm::Value* first32 =
      m_b.CreateSExt(m_b.CreateLoad(m_b.getInt32Ty(), m_b.CreateInBoundsGEP(m_b.getInt32Ty(), arg(p_cu_seqlens), n)), i64());
  llvm::Value* last32 = m_b.CreateSExt(
      m_b.CreateLoad(m_b.getInt32Ty(),
                     m_b.CreateInBoundsGEP(m_b.getInt32Ty(), arg(p_cu_seqlens), m_b.CreateAdd(n, m_b.getInt64(1)))),
      i64());
  m_b.CreateBr(join);
  m_b.SetInsertPoint(join);
  llvm::PHINode* first = m_b.CreatePHI(i64(), 2, "begin");
  first->addIncoming(first64, wide);
  first->addIncoming(first32, narrow);
  llvm::PHINode* last = m_b.CreatePHI(i64(), 2, "end");
  last->addIncoming(last64, wide);
  last->addIncoming(last32, narrow);
  return {first, m_b.CreateSub(last, first)};
}

// Value row v of the state (zeros without one).
Values TokenKernelWriter::load_state(llvm::Value* row_base) {
  llvm::BasicBlock* from = m_b.GetInsertBlock();
  llvm::BasicBlock* load = llvm::BasicBlock::Create(m_context, "load_state", m_kernel);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(m_context, "state_loaded", m_kernel);
  m_b.CreateCondBr(null_test(p_state), join, load);
  m_b.SetInsertPoint(load);
  Values loaded;
  for (int k = 0; k < D; ++k) {
    llvm::Value* index = m_b.CreateAdd(row_base, m_b.getInt64(k));
    loaded.push_back(m_config.state == StatePrecision::fp32 ? load_f32(arg(p_state), index)
                                                             : load_bf16(arg(p_state), index));
  }
  m_b.CreateBr(join);
  m_b.SetInsertPoint(join);
  Values s;
  for (int k = 0; k < D; ++k) {
    llvm::PHINode* phi = m_b.CreatePHI(f32(), 2);
    phi->addIncoming(f(0.0F), from);
    phi->addIncoming(loaded[k], load);
    s.push_back(phi);
  }
  return s;
}

void TokenKernelWriter::store_state(const Values& s, llvm::Value* row_base) {
  llvm::BasicBlock* store = llvm::BasicBlock::Create(m_context, "store_state", m_kernel);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(m_context, "done", m_kernel);
  m_b.CreateCondBr(null_test(p_state), done, store);
  m_b.SetInsertPoint(store);
  for (int k = 0; k < D; ++k) {
    llvm::Value* index = m_b.CreateAdd(row_base, m_b.getInt64(k));
    if (m_config.state == StatePrecision::fp32) {
      m_b.CreateStore(s[k], m_b.CreateInBoundsGEP(f32(), arg(p_state), index));
    } else {
      store_bf16(s[k], arg(p_state), index);
    }
  }
  m_b.CreateBr(done);
  m_b.SetInsertPoint(done);
}

// One token: this thread's row of the state after token t. per_cta: exp(A_log[h]),
// dt_bias[h][v], scale, lower_bound.
Values TokenKernelWriter::token_step(const Values& s, llvm::Value* t, llvm::Value* begin,
                                     const std::array<llvm::Value*, 4>& per_cta) {
  const auto [rate, bias, scale, lower_bound] = per_cta;
  llvm::Value* row = m_b.CreateAdd(begin, t);
  llvm::Value* at = m_b.CreateAdd(m_b.CreateMul(m_b.CreateAdd(m_b.CreateMul(row, m_heads), m_head), m_b.getInt64(D)),
                                  m_thread);
  llvm::Value* q = load_bf16(arg(p_q), at);
  llvm::Value* k = load_bf16(arg(p_k), at);
  llvm::Value* v = load_bf16(arg(p_v), at);
  llvm::Value* g = load_bf16(arg(p_g), at);
  llvm::Value* beta = sigmoid(load_bf16(arg(p_beta), m_b.CreateAdd(m_b.CreateMul(row, arg(p_beta_stride)), m_head)));
  // key column v's decay: alpha = exp(lb sigmoid(exp(A_log) (g + dt_bias)))
  llvm::Value* alpha = exp(m_b.CreateFMul(lower_bound, sigmoid(m_b.CreateFMul(rate, m_b.CreateFAdd(g, bias)))));
  llvm::Value* buffer = m_b.CreateMul(m_b.CreateAnd(t, m_b.getInt64(1)), m_b.getInt64(D));
  llvm::Value* slot = m_b.CreateAdd(buffer, m_thread);
  m_b.CreateStore(q, shared_at(m_q, slot));
  m_b.CreateStore(k, shared_at(m_k, slot));
  m_b.CreateStore(alpha, shared_at(m_alpha, slot));
  llvm::Value* warp = m_b.CreateLShr(m_thread, 5);
  llvm::Value* sums = m_b.CreateAdd(m_b.CreateMul(m_b.CreateAnd(t, m_b.getInt64(1)), m_b.getInt64(2 * k_warps)),
                                    m_b.CreateMul(warp, m_b.getInt64(2)));
  m_b.CreateStore(warp_sum(m_b.CreateFMul(q, q)), shared_at(m_sums, sums)); // every lane: the same value
  m_b.CreateStore(warp_sum(m_b.CreateFMul(k, k)), shared_at(m_sums, m_b.CreateAdd(sums, m_b.getInt64(1))));
  m_b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  // the norms, summed in the same order by every thread
  llvm::Value* first = m_b.CreateMul(m_b.CreateAnd(t, m_b.getInt64(1)), m_b.getInt64(2 * k_warps));
  llvm::Value* qq = f(0.0F);
  llvm::Value* kk = f(0.0F);
  for (int w = 0; w < k_warps; ++w) {
    qq = m_b.CreateFAdd(qq, m_b.CreateLoad(f32(), shared_at(m_sums, m_b.CreateAdd(first, m_b.getInt64(2 * w)))));
    kk = m_b.CreateFAdd(kk, m_b.CreateLoad(f32(), shared_at(m_sums, m_b.CreateAdd(first, m_b.getInt64(2 * w + 1)))));
  }
  auto rsqrt = [&](llvm::Value* x) {
    return m_b.CreateFDiv(f(1.0F), m_b.CreateIntrinsic(llvm::Intrinsic::sqrt, {f32()}, {m_b.CreateFAdd(x, f(k_norm_eps))}));
  };
  llvm::Value* rq = rsqrt(qq);
  llvm::Value* rk = rsqrt(kk);
  // S~ = S diag(alpha); p = S~ k (raw k: p^ = rk p)
  Values decayed;
  llvm::Value* p = f(0.0F);
  for (int c = 0; c < D; ++c) {
    llvm::Value* key = m_b.CreateAdd(buffer, m_b.getInt64(c));
    decayed.push_back(m_b.CreateFMul(s[c], m_b.CreateLoad(f32(), shared_at(m_alpha, key))));
    p = fma(decayed[c], m_b.CreateLoad(f32(), shared_at(m_k, key)), p);
  }
  // u = beta (v - p^); S = S~ + u k^T = S~ + (u rk) k; o = scale rq (S q)
  llvm::Value* u = m_b.CreateFMul(beta, m_b.CreateFSub(v, m_b.CreateFMul(p, rk)));
  llvm::Value* uk = m_b.CreateFMul(u, rk);
  Values next;
  llvm::Value* o = f(0.0F);
  for (int c = 0; c < D; ++c) {
    llvm::Value* key = m_b.CreateAdd(buffer, m_b.getInt64(c));
    // k read again (volatile: kept from the first pass, 128 values would sit
    // in registers beside the 128 decayed ones, and ptxas would spill)
    next.push_back(fma(uk, m_b.CreateLoad(f32(), shared_at(m_k, key), /*isVolatile=*/true), decayed[c]));
    o = fma(next[c], m_b.CreateLoad(f32(), shared_at(m_q, key)), o);
  }
  llvm::Value* result = m_b.CreateFMul(m_b.CreateFMul(o, rq), scale);
  if (m_config.fp32_output) {
    m_b.CreateStore(result, m_b.CreateInBoundsGEP(f32(), arg(p_out), at));
  } else {
    store_bf16(result, arg(p_out), at);
  }
  return next;
}

std::unique_ptr<llvm::Module> TokenKernelWriter::write() {
  declare_kernel();
  declare_shared();
  m_b.SetInsertPoint(llvm::BasicBlock::Create(m_context, "entry", m_kernel));
  m_thread = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* n = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  m_head = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y);
  m_heads = m_b.CreateSExt(arg(p_heads), i64());
  const Span span = sequence_span(n);
  llvm::Value* rate = exp(load_f32(arg(p_a_log), m_head));
  llvm::Value* bias_at = m_b.CreateAdd(m_b.CreateMul(m_head, m_b.getInt64(D)), m_thread);
  // dt_bias[h][v] or 0: the load is guarded (a null dt_bias is never read)
  llvm::BasicBlock* before_bias = m_b.GetInsertBlock();
  llvm::BasicBlock* load_bias = llvm::BasicBlock::Create(m_context, "load_bias", m_kernel);
  llvm::BasicBlock* have_bias = llvm::BasicBlock::Create(m_context, "bias", m_kernel);
  m_b.CreateCondBr(null_test(p_dt_bias), have_bias, load_bias);
  m_b.SetInsertPoint(load_bias);
  llvm::Value* loaded_bias = load_f32(arg(p_dt_bias), bias_at);
  m_b.CreateBr(have_bias);
  m_b.SetInsertPoint(have_bias);
  llvm::PHINode* bias = m_b.CreatePHI(f32(), 2, "dt_bias_v");
  bias->addIncoming(f(0.0F), before_bias);
  bias->addIncoming(loaded_bias, load_bias);
  llvm::Value* row_base =
      m_b.CreateMul(m_b.CreateAdd(m_b.CreateMul(m_b.CreateAdd(m_b.CreateMul(n, m_heads), m_head), m_b.getInt64(D)),
                                  m_thread),
                    m_b.getInt64(D));
  const Values initial = load_state(row_base);

  // for t in [0, length): the state rows as loop-carried values
  llvm::BasicBlock* preheader = m_b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(m_context, "token", m_kernel);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(m_context, "token_body", m_kernel);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(m_context, "tokens_done", m_kernel);
  m_b.CreateBr(header);
  m_b.SetInsertPoint(header);
  llvm::PHINode* t = m_b.CreatePHI(i64(), 2, "t");
  t->addIncoming(m_b.getInt64(0), preheader);
  std::vector<llvm::PHINode*> s;
  Values carried;
  for (int c = 0; c < D; ++c) {
    s.push_back(m_b.CreatePHI(f32(), 2));
    s.back()->addIncoming(initial[c], preheader);
    carried.push_back(s.back());
  }
  m_b.CreateCondBr(m_b.CreateICmpSLT(t, span.length), body, exit);
  m_b.SetInsertPoint(body);
  const Values next = token_step(carried, t, span.begin, {rate, bias, arg(p_scale), arg(p_lower_bound)});
  llvm::BasicBlock* latch = m_b.GetInsertBlock();
  t->addIncoming(m_b.CreateAdd(t, m_b.getInt64(1)), latch);
  for (int c = 0; c < D; ++c) {
    s[c]->addIncoming(next[c], latch);
  }
  m_b.CreateBr(header);
  m_b.SetInsertPoint(exit);
  store_state(carried, row_base);
  m_b.CreateRetVoid();
  return std::move(m_module);
}

} // namespace

std::unique_ptr<llvm::Module> emit_token_kernel(llvm::LLVMContext& context, const TokenKernelConfig& config) {
  return TokenKernelWriter(context, config).write();
}

} // namespace kda::ir
