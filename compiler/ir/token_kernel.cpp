#include "compiler/ir/token_kernel.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

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

constexpr int D = 128; // head dim = value rows = threads
constexpr int k_warps = D / 32;
constexpr unsigned k_global = 1;
constexpr unsigned k_shared = 3;
constexpr float k_norm_eps = 1e-6F;
constexpr int k_keys_per_iteration = 8; // the SMEM-state kernel's key loops: 16 iterations

using Values = std::vector<llvm::Value*>;

// The IR of one kernel: typed helpers over an IRBuilder positioned in it.
// No call here has two arguments that each write instructions: C++ leaves
// their order to the compiler, and the IR's text (the cache key's source
// field, the golden hashes) must not depend on which compiler built kdajit.
class TokenKernelWriter {
public:
  TokenKernelWriter(llvm::LLVMContext& context, const KernelPlan& plan)
      : m_context(context), m_plan(plan), m_token(*plan.token),
        m_module(std::make_unique<llvm::Module>(plan.token->entry_name, context)), m_b(context) {}

  std::unique_ptr<llvm::Module> write();

private:
  llvm::Type* f32() { return m_b.getFloatTy(); }
  llvm::Type* i64() { return m_b.getInt64Ty(); }
  llvm::Type* i32() { return m_b.getInt32Ty(); }
  llvm::PointerType* global_ptr() { return llvm::PointerType::get(m_context, k_global); }
  llvm::Value* f(float x) { return llvm::ConstantFP::get(f32(), x); }
  llvm::Value* c64(std::int64_t x) { return m_b.getInt64(static_cast<std::uint64_t>(x)); }

  void declare_kernel();
  void declare_shared();
  /// A scalar field of the argument struct (ld.param), by its ABI name.
  llvm::Value* field(const char* name, llvm::Type* type);
  /// A pointer field as a global-space pointer.
  llvm::Value* pointer_field(const char* name);
  llvm::Value* i64_field(const char* name) { return m_b.CreateSExtOrTrunc(field(name, i64()), i64()); }
  llvm::Value* i32_field_as_i64(const char* name) { return m_b.CreateSExt(field(name, i32()), i64()); }

  llvm::Value* sreg(llvm::Intrinsic::ID id) { return m_b.CreateZExt(m_b.CreateIntrinsic(id, {}, {}), i64()); }
  llvm::Value* exp2(llvm::Value* x) { return m_b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {x}); }
  llvm::Value* sigmoid(llvm::Value* x) {
    constexpr float k_log2e = 1.4426950408889634F;
    return m_b.CreateFDiv(f(1.0F), m_b.CreateFAdd(f(1.0F), exp2(m_b.CreateFMul(x, f(-k_log2e)))));
  }
  llvm::Value* fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return m_b.CreateIntrinsic(llvm::Intrinsic::fma, {f32()}, {a, b, c});
  }
  llvm::Value* warp_sum(llvm::Value* x);
  llvm::Value* load_bf16(llvm::Value* base, llvm::Value* index);
  void store_bf16(llvm::Value* value, llvm::Value* base, llvm::Value* index);
  llvm::Value* load_f32(llvm::Value* base, llvm::Value* index) {
    return m_b.CreateLoad(f32(), m_b.CreateInBoundsGEP(f32(), base, index));
  }
  /// fp32 element `index` of the ring buffer at `offset` in slot `slot_bytes`.
  llvm::Value* smem_f32(std::int64_t offset, llvm::Value* slot_bytes, llvm::Value* index) {
    llvm::Value* slot = m_b.CreateAdd(slot_bytes, c64(offset));
    llvm::Value* byte = m_b.CreateAdd(slot, m_b.CreateMul(index, c64(4)));
    return m_b.CreateInBoundsGEP(m_b.getInt8Ty(), m_smem, byte);
  }
  /// if (condition) { body } at the current point; the builder ends after it.
  template <class Body>
  void if_then(llvm::Value* condition, const char* name, Body body);
  /// load() in a block `name` entered only when `pointer` is set, else
  /// `fallback`: the value (a PHI called `result`) after it. A null pointer is
  /// never read.
  template <class Load>
  llvm::Value* load_or(llvm::Value* pointer, const char* name, const char* result, llvm::Value* fallback, Load load);
  /// for c in [0, 128): acc = body(c, acc), in order, the body written
  /// k_keys_per_iteration times per iteration of a loop that stays rolled
  /// (its loads can be issued ahead of the serial accumulation); the final acc.
  template <class Body>
  Values for_keys(const char* name, const Values& init, Body body);
  bool shared_state() const { return m_token.residence == StateResidence::shared; }
  /// Element (key c, value row v = this thread) of the SMEM state image.
  llvm::Value* state_at(llvm::Value* c) {
    llvm::Value* byte = m_b.CreateAdd(c64(m_token.state_offset),
                                      m_b.CreateMul(m_b.CreateAdd(m_b.CreateMul(c, c64(D)), m_thread), c64(4)));
    return m_b.CreateInBoundsGEP(m_b.getInt8Ty(), m_smem, byte);
  }

  struct Span {
    llvm::Value* begin;
    llvm::Value* length;
  };
  llvm::Value* sequence_of_cta();
  Span sequence_span(llvm::Value* n);
  Values load_state(llvm::Value* row_base);
  void store_state(const Values& s, llvm::Value* row_base);
  void store_checkpoint(const Values& s, llvm::Value* row);
  void store_output(llvm::Value* result, llvm::Value* out_rows, llvm::Value* at);
  Values token_step(const Values& s, llvm::Value* t, llvm::Value* begin, const std::array<llvm::Value*, 4>& per_cta);

  llvm::LLVMContext& m_context;
  const KernelPlan& m_plan;
  const TokenKernelPlan& m_token;
  std::unique_ptr<llvm::Module> m_module;
  llvm::IRBuilder<> m_b;
  llvm::Function* m_kernel = nullptr;
  llvm::Value* m_args = nullptr;           // the by-value ArgAbi struct
  llvm::GlobalVariable* m_smem = nullptr;  // the dynamic SMEM (the plan's ring)
  llvm::Value* m_thread = nullptr;         // v: value row, and the key column it loads
  llvm::Value* m_head = nullptr;
  llvm::Value* m_heads = nullptr;
  std::array<llvm::Value*, 6> m_rows{};    // q, k, v, g, beta, out as global pointers
  llvm::Value* m_beta_stride = nullptr;
};

void TokenKernelWriter::declare_kernel() {
  const ArgAbi& abi = m_plan.abi;
  llvm::ArrayType* args = llvm::ArrayType::get(m_b.getInt8Ty(), static_cast<std::uint64_t>(abi.size));
  m_kernel = llvm::Function::Create(llvm::FunctionType::get(m_b.getVoidTy(), {llvm::PointerType::get(m_context, 0)}, false),
                                    llvm::Function::ExternalLinkage, m_token.entry_name, m_module.get());
  m_args = m_kernel->getArg(0);
  m_args->setName("p");
  m_kernel->addParamAttr(0, llvm::Attribute::getWithByValType(m_context, args));
  m_kernel->addParamAttr(0, llvm::Attribute::getWithAlignment(m_context, llvm::Align(abi.alignment)));
  m_kernel->addParamAttr(0, llvm::Attribute::NoAlias);
  m_kernel->addParamAttr(0, llvm::Attribute::ReadOnly);
  llvm::Metadata* kernel[] = {llvm::ValueAsMetadata::get(m_kernel), llvm::MDString::get(m_context, "kernel"),
                              llvm::ValueAsMetadata::get(m_b.getInt32(1))};
  llvm::Metadata* threads[] = {llvm::ValueAsMetadata::get(m_kernel), llvm::MDString::get(m_context, "maxntidx"),
                               llvm::ValueAsMetadata::get(m_b.getInt32(static_cast<std::uint32_t>(m_token.threads)))};
  llvm::NamedMDNode* annotations = m_module->getOrInsertNamedMetadata("nvvm.annotations");
  annotations->addOperand(llvm::MDNode::get(m_context, kernel));
  annotations->addOperand(llvm::MDNode::get(m_context, threads));
}

// `extern __shared__` bytes: the plan's ring, sized at launch.
void TokenKernelWriter::declare_shared() {
  llvm::ArrayType* bytes = llvm::ArrayType::get(m_b.getInt8Ty(), 0);
  m_smem = new llvm::GlobalVariable(*m_module, bytes, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                    "kda_token_ring", nullptr, llvm::GlobalValue::NotThreadLocal, k_shared);
  m_smem->setAlignment(llvm::Align(16));
}

llvm::Value* TokenKernelWriter::field(const char* name, llvm::Type* type) {
  const ArgField* f = m_plan.abi.find(name);
  if (f == nullptr) {
    throw InternalError(fmt::format("the argument ABI (v{}) of {} has no field '{}'", m_plan.abi.version,
                                    m_plan.schedule_name, name));
  }
  llvm::Value* at = m_b.CreateInBoundsGEP(m_b.getInt8Ty(), m_args, c64(f->offset));
  return m_b.CreateAlignedLoad(type, at, llvm::Align(static_cast<std::uint64_t>(f->size)), name);
}

llvm::Value* TokenKernelWriter::pointer_field(const char* name) {
  return m_b.CreateAddrSpaceCast(field(name, llvm::PointerType::get(m_context, 0)), global_ptr(), name);
}

template <class Body>
void TokenKernelWriter::if_then(llvm::Value* condition, const char* name, Body body) {
  llvm::BasicBlock* then = llvm::BasicBlock::Create(m_context, name, m_kernel);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(m_context, fmt::format("{}_done", name), m_kernel);
  m_b.CreateCondBr(condition, then, done);
  m_b.SetInsertPoint(then);
  body();
  m_b.CreateBr(done);
  m_b.SetInsertPoint(done);
}

template <class Load>
llvm::Value* TokenKernelWriter::load_or(llvm::Value* pointer, const char* name, const char* result,
                                       llvm::Value* fallback, Load load) {
  llvm::BasicBlock* before = m_b.GetInsertBlock();
  llvm::Value* loaded = nullptr;
  llvm::BasicBlock* after_load = nullptr;
  if_then(m_b.CreateIsNotNull(pointer), name, [&] {
    loaded = load();
    after_load = m_b.GetInsertBlock();
  });
  llvm::PHINode* value = m_b.CreatePHI(fallback->getType(), 2, result);
  value->addIncoming(fallback, before);
  value->addIncoming(loaded, after_load);
  return value;
}

template <class Body>
Values TokenKernelWriter::for_keys(const char* name, const Values& init, Body body) {
  llvm::BasicBlock* before = m_b.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(m_context, name, m_kernel);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(m_context, fmt::format("{}_done", name), m_kernel);
  m_b.CreateBr(loop);
  m_b.SetInsertPoint(loop);
  llvm::PHINode* c = m_b.CreatePHI(i64(), 2, "c");
  c->addIncoming(c64(0), before);
  std::vector<llvm::PHINode*> phis;
  Values acc;
  for (llvm::Value* v : init) {
    phis.push_back(m_b.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, before);
    acc.push_back(phis.back());
  }
  Values next = acc;
  for (int j = 0; j < k_keys_per_iteration; ++j) {
    next = body(j == 0 ? static_cast<llvm::Value*>(c) : m_b.CreateAdd(c, c64(j)), next);
  }
  llvm::BasicBlock* latch = m_b.GetInsertBlock();
  llvm::Value* c_next = m_b.CreateAdd(c, c64(k_keys_per_iteration));
  c->addIncoming(c_next, latch);
  for (std::size_t i = 0; i < phis.size(); ++i) {
    phis[i]->addIncoming(next[i], latch);
  }
  llvm::BranchInst* back = m_b.CreateCondBr(m_b.CreateICmpSLT(c_next, c64(D)), loop, done);
  // llvm.loop.unroll.disable: LLVM writes `.pragma "nounroll"` and ptxas
  // keeps the loop rolled (unrolled, it takes as long as the register kernel)
  llvm::MDNode* unroll = llvm::MDNode::get(m_context, llvm::MDString::get(m_context, "llvm.loop.unroll.disable"));
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(m_context, {nullptr, unroll});
  loop_id->replaceOperandWith(0, loop_id);
  back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  m_b.SetInsertPoint(done);
  return next;
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
  return m_b.CreateBitCast(m_b.CreateShl(m_b.CreateZExt(bits, i32()), 16), f32());
}

// Round to nearest even; NaN stays a quiet NaN.
void TokenKernelWriter::store_bf16(llvm::Value* value, llvm::Value* base, llvm::Value* index) {
  llvm::Value* bits = m_b.CreateBitCast(value, i32());
  llvm::Value* lsb = m_b.CreateAnd(m_b.CreateLShr(bits, 16), 1);
  llvm::Value* rounded = m_b.CreateLShr(m_b.CreateAdd(bits, m_b.CreateAdd(lsb, m_b.getInt32(0x7fff))), 16);
  llvm::Value* nan = m_b.CreateFCmpUNO(value, value);
  llvm::Value* half = m_b.CreateSelect(nan, m_b.getInt16(0x7fc0), m_b.CreateTrunc(rounded, m_b.getInt16Ty()));
  m_b.CreateStore(half, m_b.CreateInBoundsGEP(m_b.getInt16Ty(), base, index));
}

// The sequence of this CTA: blockIdx.x, or seq_order[blockIdx.x] when the
// caller gave an order (packed only; results do not depend on it).
llvm::Value* TokenKernelWriter::sequence_of_cta() {
  llvm::Value* x = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  if (m_token.layout != LayoutKind::packed) {
    return x;
  }
  llvm::Value* order = pointer_field("seq_order");
  return load_or(order, "seq_order", "n", x,
                 [&] { return m_b.CreateSExt(m_b.CreateLoad(i32(), m_b.CreateInBoundsGEP(i32(), order, x)), i64()); });
}

// Sequence n's first token row and length: fixed n T and T, packed from
// cu_seqlens (int32 or int64).
TokenKernelWriter::Span TokenKernelWriter::sequence_span(llvm::Value* n) {
  if (m_token.layout == LayoutKind::fixed) {
    llvm::Value* length = i64_field("seq_len");
    return {m_b.CreateMul(n, length), length};
  }
  llvm::Value* offsets = pointer_field("cu_seqlens");
  llvm::Value* wide_offsets = m_b.CreateICmpNE(field("offsets_i64", i32()), m_b.getInt32(0));
  llvm::BasicBlock* wide = llvm::BasicBlock::Create(m_context, "offsets_i64", m_kernel);
  llvm::BasicBlock* narrow = llvm::BasicBlock::Create(m_context, "offsets_i32", m_kernel);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(m_context, "span", m_kernel);
  llvm::Value* next = m_b.CreateAdd(n, c64(1));
  m_b.CreateCondBr(wide_offsets, wide, narrow);
  m_b.SetInsertPoint(wide);
  llvm::Value* first64 = m_b.CreateLoad(i64(), m_b.CreateInBoundsGEP(i64(), offsets, n));
  llvm::Value* last64 = m_b.CreateLoad(i64(), m_b.CreateInBoundsGEP(i64(), offsets, next));
  m_b.CreateBr(join);
  m_b.SetInsertPoint(narrow);
  llvm::Value* first32 = m_b.CreateSExt(m_b.CreateLoad(i32(), m_b.CreateInBoundsGEP(i32(), offsets, n)), i64());
  llvm::Value* last32 = m_b.CreateSExt(m_b.CreateLoad(i32(), m_b.CreateInBoundsGEP(i32(), offsets, next)), i64());
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

// Value row v of the initial state (zeros without one): the registers'
// values, or column v of the SMEM image (nothing returned).
Values TokenKernelWriter::load_state(llvm::Value* row_base) {
  llvm::Value* state = pointer_field("state_in");
  if (shared_state()) {
    llvm::BasicBlock* load = llvm::BasicBlock::Create(m_context, "load_state", m_kernel);
    llvm::BasicBlock* zero = llvm::BasicBlock::Create(m_context, "zero_state", m_kernel);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(m_context, "state_loaded", m_kernel);
    m_b.CreateCondBr(m_b.CreateIsNotNull(state), load, zero);
    m_b.SetInsertPoint(load);
    for_keys("load_state_keys", {}, [&](llvm::Value* c, const Values&) {
      llvm::Value* index = m_b.CreateAdd(row_base, c);
      llvm::Value* x = m_token.state == StatePrecision::fp32 ? load_f32(state, index) : load_bf16(state, index);
      m_b.CreateStore(x, state_at(c));
      return Values{};
    });
    m_b.CreateBr(done);
    m_b.SetInsertPoint(zero);
    for_keys("zero_state_keys", {}, [&](llvm::Value* c, const Values&) {
      m_b.CreateStore(f(0.0F), state_at(c));
      return Values{};
    });
    m_b.CreateBr(done);
    m_b.SetInsertPoint(done);
    return {};
  }
  llvm::BasicBlock* from = m_b.GetInsertBlock();
  Values loaded;
  llvm::BasicBlock* load = nullptr;
  if_then(m_b.CreateIsNotNull(state), "load_state", [&] {
    for (int k = 0; k < D; ++k) {
      llvm::Value* index = m_b.CreateAdd(row_base, c64(k));
      loaded.push_back(m_token.state == StatePrecision::fp32 ? load_f32(state, index) : load_bf16(state, index));
    }
    load = m_b.GetInsertBlock();
  });
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
  llvm::Value* state = pointer_field("state_out");
  if_then(m_b.CreateIsNotNull(state), "store_state", [&] {
    if (shared_state()) {
      for_keys("store_state_keys", {}, [&](llvm::Value* c, const Values&) {
        llvm::Value* x = m_b.CreateLoad(f32(), state_at(c));
        llvm::Value* index = m_b.CreateAdd(row_base, c);
        if (m_token.state == StatePrecision::fp32) {
          m_b.CreateStore(x, m_b.CreateInBoundsGEP(f32(), state, index));
        } else {
          store_bf16(x, state, index);
        }
        return Values{};
      });
      return;
    }
    for (int k = 0; k < D; ++k) {
      llvm::Value* index = m_b.CreateAdd(row_base, c64(k));
      if (m_token.state == StatePrecision::fp32) {
        m_b.CreateStore(s[k], m_b.CreateInBoundsGEP(f32(), state, index));
      } else {
        store_bf16(s[k], state, index);
      }
    }
  });
}

// Value row v of checkpoint row `row` (bf16, [128][128] per head).
void TokenKernelWriter::store_checkpoint(const Values& s, llvm::Value* row) {
  llvm::Value* head_base = m_b.CreateMul(m_b.CreateAdd(m_b.CreateMul(row, m_heads), m_head), c64(D * D));
  llvm::Value* base = m_b.CreateAdd(head_base, m_b.CreateMul(m_thread, c64(D)));
  llvm::Value* checkpoints = pointer_field("checkpoints");
  if (shared_state()) {
    for_keys("checkpoint_keys", {}, [&](llvm::Value* c, const Values&) {
      llvm::Value* x = m_b.CreateLoad(f32(), state_at(c));
      store_bf16(x, checkpoints, m_b.CreateAdd(base, c));
      return Values{};
    });
    return;
  }
  for (int k = 0; k < D; ++k) {
    store_bf16(s[k], checkpoints, m_b.CreateAdd(base, c64(k)));
  }
}

// One token: this thread's row of the state after token t. per_cta: exp(A_log[h]),
// dt_bias[h][v], scale, gate_scale (lower_bound log2 e).
Values TokenKernelWriter::token_step(const Values& s, llvm::Value* t, llvm::Value* begin,
                                     const std::array<llvm::Value*, 4>& per_cta) {
  const auto [rate, bias, scale, gate_scale] = per_cta;
  const auto [q_rows, k_rows, v_rows, g_rows, beta_rows, out_rows] = m_rows;
  llvm::Value* row = m_b.CreateAdd(begin, t);
  llvm::Value* at = m_b.CreateAdd(m_b.CreateMul(m_b.CreateAdd(m_b.CreateMul(row, m_heads), m_head), c64(D)), m_thread);
  llvm::Value* q = load_bf16(q_rows, at);
  llvm::Value* k = load_bf16(k_rows, at);
  llvm::Value* v = load_bf16(v_rows, at);
  llvm::Value* g = load_bf16(g_rows, at);
  llvm::Value* beta = sigmoid(load_bf16(beta_rows, m_b.CreateAdd(m_b.CreateMul(row, m_beta_stride), m_head)));
  // key column v's decay: alpha = 2^(gate_scale sigmoid(exp(A_log) (g + dt_bias)))
  llvm::Value* alpha = exp2(m_b.CreateFMul(gate_scale, sigmoid(m_b.CreateFMul(rate, m_b.CreateFAdd(g, bias)))));
  llvm::Value* slot = m_b.CreateMul(m_b.CreateAnd(t, c64(1)), c64(m_token.stage_bytes));
  m_b.CreateStore(q, smem_f32(m_token.q_offset, slot, m_thread));
  m_b.CreateStore(k, smem_f32(m_token.k_offset, slot, m_thread));
  m_b.CreateStore(alpha, smem_f32(m_token.alpha_offset, slot, m_thread));
  llvm::Value* warp = m_b.CreateLShr(m_thread, 5);
  llvm::Value* sums = m_b.CreateMul(warp, c64(2));
  llvm::Value* q_sum = warp_sum(m_b.CreateFMul(q, q)); // every lane: the same
  m_b.CreateStore(q_sum, smem_f32(m_token.norm_sums_offset, slot, sums));
  llvm::Value* k_sum = warp_sum(m_b.CreateFMul(k, k));
  m_b.CreateStore(k_sum, smem_f32(m_token.norm_sums_offset, slot, m_b.CreateAdd(sums, c64(1))));
  m_b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  // the norms, summed in the same order by every thread
  llvm::Value* qq = f(0.0F);
  llvm::Value* kk = f(0.0F);
  for (int w = 0; w < k_warps; ++w) {
    qq = m_b.CreateFAdd(qq, m_b.CreateLoad(f32(), smem_f32(m_token.norm_sums_offset, slot, c64(2 * w))));
    kk = m_b.CreateFAdd(kk, m_b.CreateLoad(f32(), smem_f32(m_token.norm_sums_offset, slot, c64(2 * w + 1))));
  }
  auto rsqrt = [&](llvm::Value* x) {
    return m_b.CreateFDiv(f(1.0F), m_b.CreateIntrinsic(llvm::Intrinsic::sqrt, {f32()}, {m_b.CreateFAdd(x, f(k_norm_eps))}));
  };
  llvm::Value* rq = rsqrt(qq);
  llvm::Value* rk = rsqrt(kk);
  if (shared_state()) { // the same two passes over column v of the SMEM image, rolled
    llvm::Value* p = for_keys("decay_keys", {f(0.0F)}, [&](llvm::Value* c, const Values& acc) {
      llvm::Value* state = m_b.CreateLoad(f32(), state_at(c));
      llvm::Value* decayed = m_b.CreateFMul(state, m_b.CreateLoad(f32(), smem_f32(m_token.alpha_offset, slot, c)));
      m_b.CreateStore(decayed, state_at(c));
      return Values{fma(decayed, m_b.CreateLoad(f32(), smem_f32(m_token.k_offset, slot, c)), acc[0])};
    })[0];
    llvm::Value* uk = m_b.CreateFMul(m_b.CreateFMul(beta, m_b.CreateFSub(v, m_b.CreateFMul(p, rk))), rk);
    llvm::Value* o = for_keys("update_keys", {f(0.0F)}, [&](llvm::Value* c, const Values& acc) {
      llvm::Value* key = m_b.CreateLoad(f32(), smem_f32(m_token.k_offset, slot, c));
      llvm::Value* next = fma(uk, key, m_b.CreateLoad(f32(), state_at(c)));
      m_b.CreateStore(next, state_at(c));
      return Values{fma(next, m_b.CreateLoad(f32(), smem_f32(m_token.q_offset, slot, c)), acc[0])};
    })[0];
    store_output(m_b.CreateFMul(m_b.CreateFMul(o, rq), scale), out_rows, at);
    return {};
  }
  // S~ = S diag(alpha); p = S~ k (raw k: p^ = rk p)
  Values decayed;
  llvm::Value* p = f(0.0F);
  for (int c = 0; c < D; ++c) {
    decayed.push_back(m_b.CreateFMul(s[c], m_b.CreateLoad(f32(), smem_f32(m_token.alpha_offset, slot, c64(c)))));
    p = fma(decayed[c], m_b.CreateLoad(f32(), smem_f32(m_token.k_offset, slot, c64(c))), p);
  }
  // u = beta (v - p^); S = S~ + u k^T = S~ + (u rk) k; o = scale rq (S q)
  llvm::Value* u = m_b.CreateFMul(beta, m_b.CreateFSub(v, m_b.CreateFMul(p, rk)));
  llvm::Value* uk = m_b.CreateFMul(u, rk);
  Values next;
  llvm::Value* o = f(0.0F);
  for (int c = 0; c < D; ++c) {
    // k read again (volatile: kept from the first pass, 128 values would sit
    // in registers beside the 128 decayed ones, and ptxas would spill)
    llvm::Value* key = m_b.CreateLoad(f32(), smem_f32(m_token.k_offset, slot, c64(c)), /*isVolatile=*/true);
    next.push_back(fma(uk, key, decayed[c]));
    o = fma(next[c], m_b.CreateLoad(f32(), smem_f32(m_token.q_offset, slot, c64(c))), o);
  }
  store_output(m_b.CreateFMul(m_b.CreateFMul(o, rq), scale), out_rows, at);
  return next;
}

void TokenKernelWriter::store_output(llvm::Value* result, llvm::Value* out_rows, llvm::Value* at) {
  if (m_token.fp32_output) {
    m_b.CreateStore(result, m_b.CreateInBoundsGEP(f32(), out_rows, at));
  } else {
    store_bf16(result, out_rows, at);
  }
}

std::unique_ptr<llvm::Module> TokenKernelWriter::write() {
  declare_kernel();
  declare_shared();
  m_b.SetInsertPoint(llvm::BasicBlock::Create(m_context, "entry", m_kernel));
  m_rows = {pointer_field("q"), pointer_field("k"), pointer_field("v"), pointer_field("g"), pointer_field("beta"),
            pointer_field("out")};
  m_beta_stride = i64_field("beta_token_stride");
  m_thread = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  m_head = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y);
  m_heads = i32_field_as_i64("heads");
  llvm::Value* n = sequence_of_cta();
  const Span span = sequence_span(n);
  llvm::Value* rate = exp2(m_b.CreateFMul(load_f32(pointer_field("a_log"), m_head), f(1.4426950408889634F)));
  // dt_bias[h][v] or 0: the load is guarded (a null dt_bias is never read)
  llvm::Value* dt_bias = pointer_field("dt_bias");
  llvm::Value* bias = load_or(dt_bias, "load_bias", "dt_bias_v", f(0.0F), [&] {
    return load_f32(dt_bias, m_b.CreateAdd(m_b.CreateMul(m_head, c64(D)), m_thread));
  });
  // slot n of the state, or pool slot state_indices[n]; slots state_slot_stride apart
  llvm::Value* indices = pointer_field("state_indices");
  llvm::Value* slot = load_or(indices, "pool_slot", "state_slot", n, [&] {
    return m_b.CreateSExt(m_b.CreateLoad(i32(), m_b.CreateInBoundsGEP(i32(), indices, n)), i64());
  });
  llvm::Value* slot_base = m_b.CreateMul(slot, i64_field("state_slot_stride"));
  llvm::Value* head_base = m_b.CreateMul(m_head, c64(D * D));
  llvm::Value* row_in_slot = m_b.CreateAdd(head_base, m_b.CreateMul(m_thread, c64(D)));
  llvm::Value* row_base = m_b.CreateAdd(slot_base, row_in_slot);
  const Values initial = load_state(row_base);
  // checkpoints: a row before every `interval` tokens, from row checkpoint_starts[n]
  llvm::Value* interval = nullptr;
  llvm::Value* first_row = nullptr;
  if (m_token.checkpoints) {
    interval = m_b.CreateMul(i32_field_as_i64("checkpoint_chunks"), c64(m_plan.tiles.chunk_size));
    first_row = m_b.CreateLoad(i64(), m_b.CreateInBoundsGEP(i64(), pointer_field("checkpoint_starts"), n));
  }
  const std::array<llvm::Value*, 4> per_cta = {rate, bias, field("scale", f32()), field("gate_scale", f32())};

  // for t in [0, length): the state rows as loop-carried values
  llvm::BasicBlock* preheader = m_b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(m_context, "token", m_kernel);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(m_context, "token_body", m_kernel);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(m_context, "tokens_done", m_kernel);
  m_b.CreateBr(header);
  m_b.SetInsertPoint(header);
  llvm::PHINode* t = m_b.CreatePHI(i64(), 2, "t");
  t->addIncoming(c64(0), preheader);
  llvm::PHINode* due = nullptr; // the token the next checkpoint row is due before
  llvm::PHINode* row = nullptr; // its row
  if (m_token.checkpoints) {
    due = m_b.CreatePHI(i64(), 2, "checkpoint_due");
    due->addIncoming(c64(0), preheader);
    row = m_b.CreatePHI(i64(), 2, "checkpoint_row");
    row->addIncoming(first_row, preheader);
  }
  std::vector<llvm::PHINode*> s; // the state's registers (none when it lives in SMEM)
  Values carried;
  for (llvm::Value* x : initial) {
    s.push_back(m_b.CreatePHI(f32(), 2));
    s.back()->addIncoming(x, preheader);
    carried.push_back(s.back());
  }
  m_b.CreateCondBr(m_b.CreateICmpSLT(t, span.length), body, exit);
  m_b.SetInsertPoint(body);
  llvm::Value* next_due = nullptr;
  llvm::Value* next_row = nullptr;
  if (m_token.checkpoints) {
    llvm::Value* take = m_b.CreateICmpEQ(t, due);
    if_then(take, "checkpoint", [&] { store_checkpoint(carried, row); });
    next_due = m_b.CreateSelect(take, m_b.CreateAdd(due, interval), due);
    next_row = m_b.CreateSelect(take, m_b.CreateAdd(row, c64(1)), row);
  }
  const Values next = token_step(carried, t, span.begin, per_cta);
  llvm::BasicBlock* latch = m_b.GetInsertBlock();
  t->addIncoming(m_b.CreateAdd(t, c64(1)), latch);
  if (m_token.checkpoints) {
    due->addIncoming(next_due, latch);
    row->addIncoming(next_row, latch);
  }
  for (std::size_t c = 0; c < s.size(); ++c) {
    s[c]->addIncoming(next[c], latch);
  }
  m_b.CreateBr(header);
  m_b.SetInsertPoint(exit);
  store_state(carried, row_base);
  m_b.CreateRetVoid();
  return std::move(m_module);
}

} // namespace

std::unique_ptr<llvm::Module> emit_token_kernel(llvm::LLVMContext& context, const KernelPlan& plan) {
  if (!plan.token) {
    throw InternalError(fmt::format("plan {} ({} family) has no token kernel: only the llvm backend's plans do",
                                    plan.schedule_name, to_string(plan.family)));
  }
  return TokenKernelWriter(context, plan).write();
}

} // namespace kda::ir
