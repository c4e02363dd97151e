#include "backend-cpu/codegen.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "backend-cpu/llvm_init.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::cpu {

namespace {

using ir::DataType;
using ir::Expr;
using ir::NodeKind;
using ir::Stmt;

// Allocations up to this size live on the stack; larger ones on the heap.
constexpr int64_t kMaxStackBytes = 64 * 1024;
constexpr int64_t kAllocAlign = 64;

// Error codes the generated functions return.
constexpr int32_t kErrDivByZero = 1;
constexpr int32_t kErrOutOfMemory = 2;

[[noreturn]] void fail(const std::string& msg) { throw CompileError("cpu codegen: " + msg); }

const int64_t* const_int_of(const Expr& e) {
  if (const auto* b = e.as<ir::BroadcastNode>()) return ir::as_const_int(b->value);
  return ir::as_const_int(e);
}

class CodeGen {
 public:
  CodeGen(llvm::LLVMContext& ctx, llvm::Module& m, const Target& t) : ctx_(ctx), mod_(m), target_(t), b_(ctx) {}

  void add_function(const schedule::LoweredFunc& f);

 private:
  // ---------------------------------------------------------------- types
  llvm::Type* scalar_type(DataType t) {
    switch (t.code()) {
      case ir::TypeCode::Int:
      case ir::TypeCode::UInt: return llvm::Type::getIntNTy(ctx_, static_cast<unsigned>(t.bits()));
      case ir::TypeCode::Float: return t.bits() == 64 ? b_.getDoubleTy() : b_.getFloatTy();
      case ir::TypeCode::BFloat: return b_.getFloatTy();  // computed in float, rounded after each op
      case ir::TypeCode::Handle: return b_.getPtrTy();
    }
    return nullptr;
  }
  // The type values of `t` have in registers.
  llvm::Type* type_of(DataType t) {
    llvm::Type* s = scalar_type(t.element_of());
    return t.lanes() == 1 ? s : llvm::FixedVectorType::get(s, static_cast<unsigned>(t.lanes()));
  }
  // The type one element of `t` has in memory.
  llvm::Type* storage_type(DataType t) {
    t = t.element_of();
    if (t.is_float() && t.bits() == 16) return t.code() == ir::TypeCode::BFloat ? b_.getInt16Ty() : b_.getHalfTy();
    if (t.is_float()) return scalar_type(t);
    return llvm::Type::getIntNTy(ctx_, static_cast<unsigned>(t.storage_bytes() * 8));
  }
  llvm::Type* with_lanes(llvm::Type* s, int lanes) {
    return lanes == 1 ? s : llvm::FixedVectorType::get(s, static_cast<unsigned>(lanes));
  }
  static bool is_half(DataType t) { return t.code() == ir::TypeCode::Float && t.bits() == 16; }
  static bool is_bf16(DataType t) { return t.code() == ir::TypeCode::BFloat; }
  static bool is_narrow_float(DataType t) { return is_half(t) || is_bf16(t); }

  // ---------------------------------------------------------------- value helpers
  llvm::Value* splat_if_needed(llvm::Value* v, int lanes) {
    if (lanes == 1 || v->getType()->isVectorTy()) return v;
    return b_.CreateVectorSplat(static_cast<unsigned>(lanes), v);
  }

  // Memory representation -> register representation.
  llvm::Value* from_storage(llvm::Value* v, DataType t) {
    DataType e = t.element_of();
    if (is_half(e)) return b_.CreateFPExt(v, type_of(t));
    if (is_bf16(e)) {
      llvm::Value* w = b_.CreateShl(b_.CreateZExt(v, with_lanes(b_.getInt32Ty(), t.lanes())), 16);
      return b_.CreateBitCast(w, type_of(t));
    }
    if (e.is_integer() && e.bits() != e.storage_bytes() * 8) return b_.CreateTrunc(v, type_of(t));
    return v;
  }
  // Register representation -> memory representation.
  llvm::Value* to_storage(llvm::Value* v, DataType t) {
    DataType e = t.element_of();
    int lanes = t.lanes();
    if (is_half(e)) return b_.CreateFPTrunc(v, with_lanes(b_.getHalfTy(), lanes));
    if (is_bf16(e)) return b_.CreateTrunc(b_.CreateLShr(bf16_round_bits(v, lanes), 16), with_lanes(b_.getInt16Ty(), lanes));
    if (e.is_integer() && e.bits() != e.storage_bytes() * 8) {
      llvm::Type* st = with_lanes(storage_type(e), lanes);
      return e.is_int() ? b_.CreateSExt(v, st) : b_.CreateZExt(v, st);
    }
    return v;
  }
  // float bits rounded to nearest even at bit 16 (bfloat16 in the upper half); NaN -> 0x7fc0.
  llvm::Value* bf16_round_bits(llvm::Value* f, int lanes) {
    llvm::Type* i32 = with_lanes(b_.getInt32Ty(), lanes);
    llvm::Value* u = b_.CreateBitCast(f, i32);
    llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(u, 16), llvm::ConstantInt::get(i32, 1));
    llvm::Value* r = b_.CreateAnd(b_.CreateAdd(b_.CreateAdd(u, llvm::ConstantInt::get(i32, 0x7fff)), lsb),
                                  llvm::ConstantInt::get(i32, 0xffff0000u));
    llvm::Value* nan = b_.CreateFCmpUNO(f, f);
    return b_.CreateSelect(nan, llvm::ConstantInt::get(i32, 0x7fc00000u), r);
  }
  // A float computed in float/double rounded to the precision of `t` (f16, bf16).
  llvm::Value* round_to(llvm::Value* v, DataType t) {
    DataType e = t.element_of();
    int lanes = t.lanes();
    llvm::Type* f32 = with_lanes(b_.getFloatTy(), lanes);
    if (is_half(e)) return b_.CreateFPExt(b_.CreateFPTrunc(v, with_lanes(b_.getHalfTy(), lanes)), f32);
    if (is_bf16(e)) {
      if (v->getType()->getScalarType()->isDoubleTy()) v = b_.CreateFPTrunc(v, f32);
      return b_.CreateBitCast(bf16_round_bits(v, lanes), f32);
    }
    if (e.bits() == 32 && v->getType()->getScalarType()->isDoubleTy()) return b_.CreateFPTrunc(v, f32);
    return v;
  }

  llvm::Value* to_i64(llvm::Value* v, DataType t) {
    llvm::Type* i64 = with_lanes(b_.getInt64Ty(), t.lanes());
    if (t.bits() == 64) return v;
    return t.is_int() ? b_.CreateSExt(v, i64) : b_.CreateZExt(v, i64);
  }

  // ---------------------------------------------------------------- error exits
  // Branches to a block that returns `code` from the current function when `bad`.
  void check(llvm::Value* bad, int32_t code) {
    if (bad->getType()->isVectorTy()) bad = b_.CreateOrReduce(bad);
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* err = llvm::BasicBlock::Create(ctx_, "fault", fn);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "ok", fn);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(bad, err, ok, md.createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(err);
    b_.CreateRet(b_.getInt32(code));
    b_.SetInsertPoint(ok);
  }

  // ---------------------------------------------------------------- expressions
  llvm::Value* emit(const Expr& e);
  llvm::Value* emit_binary(NodeKind kind, const Expr& ea, const Expr& eb, DataType t);
  llvm::Value* float_binary(NodeKind kind, llvm::Value* a, llvm::Value* b, DataType et);
  llvm::Value* emit_lane_reduction(const ir::CallNode* op, NodeKind kind);
  llvm::Value* emit_int_divmod(bool is_div, const Expr& ea, const Expr& eb, llvm::Value* a, llvm::Value* b, DataType at);
  llvm::Value* emit_cast(DataType to, const Expr& value);
  llvm::Value* emit_call(const ir::CallNode* op);
  llvm::Value* emit_low_level_call(const ir::CallNode* op);
  llvm::Value* emit_dot_u8s8x4(const ir::CallNode* op, llvm::Value* acc);
  const char* vnni_intrinsic(int lanes) const;
  llvm::Value* emit_load(const ir::LoadNode* op);
  llvm::Value* element_ptr(llvm::Value* base, DataType elem, llvm::Value* index) {
    return b_.CreateInBoundsGEP(storage_type(elem), base, index);
  }
  // A buffer index is in bounds, so its signed arithmetic cannot wrap: emitted with nsw,
  // LLVM widens it to 64 bits once per loop instead of sign-extending every address.
  llvm::Value* index_value(const Expr& index) {
    ++index_depth_;
    llvm::Value* v = emit(index);
    --index_depth_;
    return to_i64(v, index.dtype());
  }
  llvm::Value* buffer(const ir::Var& v) {
    auto it = vars_.find(v.get());
    if (it == vars_.end()) fail("buffer '" + v.name() + "' is used where it is not defined");
    return it->second;
  }
  llvm::Value* double_libcall(const char* name, llvm::Value* x, llvm::Value* y, int lanes);
  llvm::Value* libmvec_call(const std::string& fn, const std::vector<llvm::Value*>& xs, int lanes);

  // ---------------------------------------------------------------- statements
  void emit(const Stmt& s);
  void emit_for(const ir::ForNode* op);
  void emit_parallel_for(const ir::ForNode* op);
  void emit_loop(const ir::Var& var, llvm::Value* begin, llvm::Value* end, ir::ForKind kind, const Stmt& body);
  void emit_store(const ir::StoreNode* op);
  void emit_allocate(const ir::AllocateNode* op);

  llvm::AllocaInst* entry_alloca(llvm::Type* t, llvm::Value* count, const std::string& name) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::IRBuilder<> eb(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    llvm::AllocaInst* a = eb.CreateAlloca(t, count, name);
    a->setAlignment(llvm::Align(kAllocAlign));
    return a;
  }

  void set_function_attrs(llvm::Function* fn) {
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr("target-cpu", target_.cpu);
    std::string fs = target_.feature_string();
    if (!fs.empty()) fn->addFnAttr("target-features", fs);
    if (target_.is_x86() && target_.has_feature("avx512f")) {
      // Keep 512-bit vectors whole: x86 otherwise splits them on CPUs tuned for 256.
      fn->addFnAttr("min-legal-vector-width", "512");
      fn->addFnAttr("prefer-vector-width", "512");
    }
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  const Target& target_;
  llvm::IRBuilder<> b_;
  std::unordered_map<const ir::VarNode*, llvm::Value*> vars_;  // scalars, vectors and buffer pointers
  std::string func_name_;
  int parallel_count_ = 0;
  int index_depth_ = 0;  // > 0 while an index expression is emitted (index_value)
};

// ---------------------------------------------------------------- functions

void CodeGen::add_function(const schedule::LoweredFunc& f) {
  func_name_ = f.name;
  vars_.clear();
  std::vector<llvm::Type*> params(f.args.size(), b_.getPtrTy());
  auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), params, false);
  if (mod_.getFunction(f.name)) fail("two functions are named '" + f.name + "'");
  llvm::Function* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f.name, mod_);
  set_function_attrs(fn);
  for (size_t i = 0; i < f.args.size(); ++i) {
    const ir::Buffer& buf = f.args[i];
    llvm::Argument* a = fn->getArg(static_cast<unsigned>(i));
    a->setName(buf->name);
    a->addAttr(llvm::Attribute::NoAlias);
    a->addAttr(llvm::Attribute::NoCapture);
    int64_t elems = 1;
    bool known = true;
    for (const Expr& d : buf->shape) {
      const int64_t* n = ir::as_const_int(d);
      if (!n) known = false;
      else elems *= *n;
    }
    if (known && elems > 0) {
      a->addAttrs(llvm::AttrBuilder(ctx_).addDereferenceableAttr(static_cast<uint64_t>(elems * buf->dtype.storage_bytes())));
    }
    vars_[buf->data.get()] = a;
  }
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
  b_.SetInsertPoint(entry);
  llvm::FastMathFlags fmf;
  if (target_.fp_contract) fmf.setAllowContract(true);
  b_.setFastMathFlags(fmf);
  emit(f.body);
  b_.CreateRet(b_.getInt32(0));

  // The packed entry: int32_t f_packed(void** args, int32_t n).
  auto* pty = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy(), b_.getInt32Ty()}, false);
  llvm::Function* packed = llvm::Function::Create(pty, llvm::Function::ExternalLinkage, f.name + "_packed", mod_);
  set_function_attrs(packed);
  llvm::BasicBlock* pe = llvm::BasicBlock::Create(ctx_, "entry", packed);
  llvm::BasicBlock* bad = llvm::BasicBlock::Create(ctx_, "bad_args", packed);
  llvm::BasicBlock* call = llvm::BasicBlock::Create(ctx_, "call", packed);
  b_.SetInsertPoint(pe);
  b_.CreateCondBr(b_.CreateICmpNE(packed->getArg(1), b_.getInt32(static_cast<int32_t>(f.args.size()))), bad, call);
  b_.SetInsertPoint(bad);
  b_.CreateRet(b_.getInt32(-1));
  b_.SetInsertPoint(call);
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < f.args.size(); ++i) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), packed->getArg(0), i);
    args.push_back(b_.CreateLoad(b_.getPtrTy(), slot));
  }
  b_.CreateRet(b_.CreateCall(fn, args));
}

// ---------------------------------------------------------------- expressions

llvm::Value* CodeGen::emit(const Expr& e) {
  DataType t = e.dtype();
  switch (e.kind()) {
    case NodeKind::IntImm: {
      auto* c = llvm::ConstantInt::get(scalar_type(t.element_of()), static_cast<uint64_t>(e.as<ir::IntImmNode>()->value), true);
      return splat_if_needed(c, t.lanes());
    }
    case NodeKind::FloatImm: {
      auto* c = llvm::ConstantFP::get(scalar_type(t.element_of()), e.as<ir::FloatImmNode>()->value);
      return splat_if_needed(c, t.lanes());
    }
    case NodeKind::StringImm: {
      return b_.CreateGlobalString(e.as<ir::StringImmNode>()->value);
    }
    case NodeKind::Var: {
      auto it = vars_.find(e.as<ir::VarNode>());
      if (it == vars_.end()) fail("variable '" + e.as<ir::VarNode>()->name + "' is used where it is not defined");
      return it->second;
    }
#define KILN_BIN(N) \
  case NodeKind::N: return emit_binary(NodeKind::N, e.as<ir::N##Node>()->a, e.as<ir::N##Node>()->b, t);
      KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
      KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
    case NodeKind::Not: {
      const Expr& a = e.as<ir::NotNode>()->a;
      llvm::Value* v = emit(a);
      if (a.dtype().is_bool()) return b_.CreateNot(v);
      llvm::Value* z = a.dtype().is_float() ? b_.CreateFCmpOEQ(v, llvm::Constant::getNullValue(v->getType()))
                                            : b_.CreateICmpEQ(v, llvm::Constant::getNullValue(v->getType()));
      return a.dtype().is_float() ? b_.CreateUIToFP(z, type_of(t)) : b_.CreateZExt(z, type_of(t));
    }
    case NodeKind::Cast: return emit_cast(t, e.as<ir::CastNode>()->value);
    case NodeKind::Select: {
      auto* p = e.as<ir::SelectNode>();
      llvm::Value* c = emit(p->cond);
      llvm::Value* x = emit(p->true_value);
      llvm::Value* y = emit(p->false_value);
      return b_.CreateSelect(c, splat_if_needed(x, t.lanes()), splat_if_needed(y, t.lanes()));
    }
    case NodeKind::Load: return emit_load(e.as<ir::LoadNode>());
    case NodeKind::Ramp: {
      auto* p = e.as<ir::RampNode>();
      llvm::Value* base = emit(p->base);
      llvm::Value* stride = emit(p->stride);
      llvm::Type* st = base->getType();
      std::vector<llvm::Constant*> steps;
      for (int l = 0; l < p->lanes; ++l) steps.push_back(llvm::ConstantInt::get(st, static_cast<uint64_t>(l)));
      llvm::Value* lanes = llvm::ConstantVector::get(steps);
      return b_.CreateAdd(b_.CreateVectorSplat(static_cast<unsigned>(p->lanes), base),
                          b_.CreateMul(b_.CreateVectorSplat(static_cast<unsigned>(p->lanes), stride), lanes));
    }
    case NodeKind::Broadcast: {
      auto* p = e.as<ir::BroadcastNode>();
      return b_.CreateVectorSplat(static_cast<unsigned>(p->lanes), emit(p->value));
    }
    case NodeKind::Call: return emit_call(e.as<ir::CallNode>());
    case NodeKind::Let: {
      auto* p = e.as<ir::LetNode>();
      vars_[p->var.get()] = emit(p->value);
      return emit(p->body);
    }
    default:
      fail(std::string("the CPU backend compiles lowered IR; found a ") + ir::kind_name(e.kind()) + " node: " + ir::to_string(e));
  }
}

// A binary operation on float values of type `et` (f16 and bf16 computed in float,
// rounded to their precision).
llvm::Value* CodeGen::float_binary(NodeKind kind, llvm::Value* a, llvm::Value* b, DataType et) {
  int lanes = et.lanes();
  switch (kind) {
    case NodeKind::Add: return round_to(b_.CreateFAdd(a, b), et);
    case NodeKind::Sub: return round_to(b_.CreateFSub(a, b), et);
    case NodeKind::Mul: return round_to(b_.CreateFMul(a, b), et);
    case NodeKind::Div: return round_to(b_.CreateFDiv(a, b), et);
    case NodeKind::Mod: {
      // a - floor(a / b) * b in double, rounded once (as the interpreter does).
      llvm::Type* f64 = with_lanes(b_.getDoubleTy(), lanes);
      llvm::Value* x = a->getType() == f64 ? a : b_.CreateFPExt(a, f64);
      llvm::Value* y = b->getType() == f64 ? b : b_.CreateFPExt(b, f64);
      llvm::FastMathFlags saved = b_.getFastMathFlags();
      b_.clearFastMathFlags();
      llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(x, y));
      llvm::Value* r = b_.CreateFSub(x, b_.CreateFMul(q, y));
      b_.setFastMathFlags(saved);
      return round_to(r, et);
    }
    case NodeKind::Min: return b_.CreateSelect(b_.CreateFCmpOLT(b, a), b, a);
    case NodeKind::Max: return b_.CreateSelect(b_.CreateFCmpOGT(b, a), b, a);
    case NodeKind::EQ: return b_.CreateFCmpOEQ(a, b);
    case NodeKind::NE: return b_.CreateFCmpUNE(a, b);
    case NodeKind::LT: return b_.CreateFCmpOLT(a, b);
    case NodeKind::LE: return b_.CreateFCmpOLE(a, b);
    case NodeKind::GT: return b_.CreateFCmpOGT(a, b);
    case NodeKind::GE: return b_.CreateFCmpOGE(a, b);
    default: break;
  }
  fail(std::string(ir::kind_name(kind)) + " is not defined on " + et.to_string());
}

llvm::Value* CodeGen::emit_binary(NodeKind kind, const Expr& ea, const Expr& eb, DataType t) {
  DataType at = ea.dtype();
  int lanes = std::max(at.lanes(), eb.dtype().lanes());
  // acc + dot_u8s8x4(a, b): one vpdpbusd accumulates into acc.
  if (kind == NodeKind::Add && vnni_intrinsic(lanes)) {
    auto dot_of = [&](const Expr& e) {
      const auto* c = e.as<ir::CallNode>();
      return c && c->name == "dot_u8s8x4" && c->dtype.lanes() == lanes ? c : nullptr;
    };
    if (const auto* dot = dot_of(eb); dot && at.lanes() == lanes) return emit_dot_u8s8x4(dot, emit(ea));
    if (const auto* dot = dot_of(ea); dot && eb.dtype().lanes() == lanes) return emit_dot_u8s8x4(dot, emit(eb));
  }
  llvm::Value* a = splat_if_needed(emit(ea), lanes);
  llvm::Value* b = splat_if_needed(emit(eb), lanes);
  DataType et = at.element_of().with_lanes(lanes);
  if (at.is_float()) return float_binary(kind, a, b, et);
  if (at.is_handle()) fail(std::string(ir::kind_name(kind)) + " on handles");
  bool s = at.is_int();
  switch (kind) {
    case NodeKind::Add: return b_.CreateAdd(a, b, "", false, s && index_depth_ > 0);
    case NodeKind::Sub: return b_.CreateSub(a, b, "", false, s && index_depth_ > 0);
    case NodeKind::Mul: return b_.CreateMul(a, b, "", false, s && index_depth_ > 0);
    case NodeKind::Div: return emit_int_divmod(true, ea, eb, a, b, et);
    case NodeKind::Mod: return emit_int_divmod(false, ea, eb, a, b, et);
    case NodeKind::Min: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case NodeKind::Max: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    case NodeKind::EQ: return b_.CreateICmpEQ(a, b);
    case NodeKind::NE: return b_.CreateICmpNE(a, b);
    case NodeKind::LT: return s ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case NodeKind::LE: return s ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case NodeKind::GT: return s ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case NodeKind::GE: return s ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    case NodeKind::And:
    case NodeKind::Or: {
      if (!at.is_bool()) {
        a = b_.CreateICmpNE(a, llvm::Constant::getNullValue(a->getType()));
        b = b_.CreateICmpNE(b, llvm::Constant::getNullValue(b->getType()));
      }
      llvm::Value* r = kind == NodeKind::And ? b_.CreateAnd(a, b) : b_.CreateOr(a, b);
      return t.is_bool() ? r : b_.CreateZExt(r, type_of(t));
    }
    default: break;
  }
  fail(std::string(ir::kind_name(kind)) + " is not defined on " + at.to_string());
}

// Floor division and modulo; a zero divisor makes the function return kErrDivByZero.
llvm::Value* CodeGen::emit_int_divmod(bool is_div, const Expr& ea, const Expr& eb, llvm::Value* a, llvm::Value* b,
                                      DataType at) {
  (void)ea;
  llvm::Type* ty = a->getType();
  const int64_t* c = const_int_of(eb);
  if (c && *c == 0) fail("division by the constant zero in " + ir::to_string(eb));
  if (!c) check(b_.CreateICmpEQ(b, llvm::Constant::getNullValue(ty)), kErrDivByZero);
  if (at.is_uint()) return is_div ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  llvm::Value* minus_one = llvm::Constant::getAllOnesValue(ty);
  if (c && *c > 0) {
    llvm::Value* q = b_.CreateSDiv(a, b);
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* neg = b_.CreateICmpSLT(r, zero);
    if (is_div) return b_.CreateSub(q, b_.CreateZExt(neg, ty));
    return b_.CreateSelect(neg, b_.CreateAdd(r, b), r);
  }
  // b == -1 would overflow sdiv for the minimum value: divide by 1 instead and fix up.
  llvm::Value* is_m1 = b_.CreateICmpEQ(b, minus_one);
  llvm::Value* safe = b_.CreateSelect(is_m1, llvm::ConstantInt::get(ty, 1), b);
  llvm::Value* q = b_.CreateSDiv(a, safe);
  llvm::Value* r = b_.CreateSRem(a, safe);
  llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
  if (is_div) return b_.CreateSelect(is_m1, b_.CreateSub(zero, a), b_.CreateSub(q, b_.CreateZExt(adjust, ty)));
  return b_.CreateSelect(is_m1, zero, b_.CreateSelect(adjust, b_.CreateAdd(r, b), r));
}

llvm::Value* CodeGen::emit_cast(DataType to, const Expr& value) {
  DataType from = value.dtype();
  llvm::Value* v = emit(value);
  int lanes = to.lanes();
  v = splat_if_needed(v, lanes);
  DataType fe = from.element_of(), te = to.element_of();
  if (fe == te) return v;
  llvm::Type* f32 = with_lanes(b_.getFloatTy(), lanes);
  llvm::Type* f64 = with_lanes(b_.getDoubleTy(), lanes);
  if (te.is_float()) {
    if (fe.is_float()) {
      bool src_double = fe.bits() == 64;
      if (te.bits() == 64) return src_double ? v : b_.CreateFPExt(v, f64);
      if (is_half(te) && src_double) return b_.CreateFPExt(b_.CreateFPTrunc(v, with_lanes(b_.getHalfTy(), lanes)), f32);
      if (src_double) v = b_.CreateFPTrunc(v, f32);
      return round_to(v, to);
    }
    // Integer sources convert exactly to double when they fit 53 bits, as in the interpreter.
    int exact_bits = te.bits() == 64 ? 64 : (te.bits() == 32 ? 53 : 24);
    llvm::Type* mid = fe.bits() <= exact_bits ? (te.bits() == 64 ? f64 : f32) : f64;
    llvm::Value* r = fe.is_int() ? b_.CreateSIToFP(v, mid) : b_.CreateUIToFP(v, mid);
    if (is_half(te) && mid == f64) return b_.CreateFPExt(b_.CreateFPTrunc(r, with_lanes(b_.getHalfTy(), lanes)), f32);
    return round_to(r, to);
  }
  if (te.is_bool()) {
    if (fe.is_float()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  llvm::Type* dst = type_of(to);
  if (fe.is_float()) {
    // Truncation towards zero; NaN -> 0; saturated to int64 (uint64 above 2^63), then wrapped.
    llvm::Type* i64 = with_lanes(b_.getInt64Ty(), lanes);
    llvm::Value* r = b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {i64, v->getType()}, {v});
    if (te.is_uint()) {
      llvm::Value* u = b_.CreateIntrinsic(llvm::Intrinsic::fptoui_sat, {i64, v->getType()}, {v});
      llvm::Value* big = b_.CreateFCmpOGE(v, llvm::ConstantFP::get(v->getType(), 9.2233720368547758e18));
      r = b_.CreateSelect(big, u, r);
    }
    return te.bits() == 64 ? r : b_.CreateTrunc(r, dst);
  }
  if (fe.bits() == te.bits()) return v;
  if (fe.bits() > te.bits()) return b_.CreateTrunc(v, dst);
  return fe.is_int() ? b_.CreateSExt(v, dst) : b_.CreateZExt(v, dst);
}

// A float vector function of glibc's libmvec (x86-64 vector ABI: _ZGV<isa>N<w><v..>_<f>),
// applied in chunks of the target's native width; null when the target has no variant.
llvm::Value* CodeGen::libmvec_call(const std::string& fn, const std::vector<llvm::Value*>& xs, int lanes) {
  int w = 4;
  char isa = 'b';  // SSE4
  if (target_.has_feature("avx512f")) {
    w = 16, isa = 'e';
  } else if (target_.has_feature("avx2")) {
    w = 8, isa = 'd';
  } else if (target_.has_feature("avx")) {
    w = 8, isa = 'c';
  } else if (!target_.has_feature("sse4.1")) {
    return nullptr;
  }
  llvm::Type* vt = with_lanes(b_.getFloatTy(), w);
  std::string mangled = "_ZGV" + std::string(1, isa) + "N" + std::to_string(w) + std::string(xs.size(), 'v') + "_" + fn;
  std::vector<llvm::Type*> params(xs.size(), vt);
  llvm::FunctionCallee callee = mod_.getOrInsertFunction(mangled, llvm::FunctionType::get(vt, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setDoesNotAccessMemory();
  }
  std::vector<llvm::Value*> parts;
  for (int c = 0; c < lanes; c += w) {
    std::vector<int> pick;
    for (int l = 0; l < w; ++l) pick.push_back(c + l < lanes ? c + l : -1);
    std::vector<llvm::Value*> args;
    for (llvm::Value* x : xs) args.push_back(b_.CreateShuffleVector(x, pick));
    parts.push_back(b_.CreateCall(callee, args));
  }
  // Concatenate the chunks (pairwise) and drop the padding lanes.
  while (parts.size() > 1) {
    std::vector<llvm::Value*> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      int n = static_cast<int>(llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements());
      std::vector<int> both;
      for (int l = 0; l < 2 * n; ++l) both.push_back(l);
      next.push_back(b_.CreateShuffleVector(parts[i], parts[i + 1], both));
    }
    if (parts.size() % 2) {
      llvm::Value* last = parts.back();
      int n = static_cast<int>(llvm::cast<llvm::FixedVectorType>(last->getType())->getNumElements());
      std::vector<int> pad;
      for (int l = 0; l < 2 * n; ++l) pad.push_back(l < n ? l : -1);
      next.push_back(b_.CreateShuffleVector(last, pad));
    }
    parts = std::move(next);
  }
  std::vector<int> keep;
  for (int l = 0; l < lanes; ++l) keep.push_back(l);
  return b_.CreateShuffleVector(parts[0], keep);
}

// Calls a double-precision libm function lane by lane.
llvm::Value* CodeGen::double_libcall(const char* name, llvm::Value* x, llvm::Value* y, int lanes) {
  llvm::Type* f64 = b_.getDoubleTy();
  std::vector<llvm::Type*> params(y ? 2 : 1, f64);
  llvm::FunctionCallee fn = mod_.getOrInsertFunction(name, llvm::FunctionType::get(f64, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  auto call = [&](llvm::Value* a, llvm::Value* c) {
    llvm::CallInst* ci = c ? b_.CreateCall(fn, {a, c}) : b_.CreateCall(fn, {a});
    ci->setDoesNotThrow();
    return ci;
  };
  if (lanes == 1) return call(x, y);
  llvm::Value* out = llvm::PoisonValue::get(with_lanes(f64, lanes));
  for (int l = 0; l < lanes; ++l) {
    llvm::Value* a = b_.CreateExtractElement(x, static_cast<uint64_t>(l));
    llvm::Value* c = y ? b_.CreateExtractElement(y, static_cast<uint64_t>(l)) : nullptr;
    out = b_.CreateInsertElement(out, call(a, c), static_cast<uint64_t>(l));
  }
  return out;
}

// Calls that tensor intrinsics use to reach the machine (as TVM's call_llvm_intrin):
//   address_of(Load)          the element's address (handle)
//   prefetch(Load)            brings the element's cache line in, for reading (int32 0)
//   vload(handle)             a value of the call's type read from an address
//   vstore(handle, value)     writes it (returns int32 0)
//   reinterpret(value)        the same bits as the call's type
//   llvm.<intrinsic>(...)     an LLVM intrinsic by name, e.g. llvm.x86.avx512.vpdpbusd.512
// Returns null for every other name.
llvm::Value* CodeGen::emit_low_level_call(const ir::CallNode* op) {
  const std::string& name = op->name;
  auto need = [&](size_t n) {
    if (op->args.size() != n) fail("intrinsic '" + name + "' takes " + std::to_string(n) + " arguments");
  };
  // The address of the element a scalar load (the call's one argument) reads.
  auto loaded_address = [&] {
    need(1);
    const auto* ld = op->args[0].as<ir::LoadNode>();
    if (!ld || ld->dtype.lanes() != 1) fail(name + " needs a scalar load: " + ir::to_string(op->args[0]));
    return element_ptr(buffer(ld->buffer_var), ld->dtype, index_value(ld->index));
  };
  if (name == "address_of") return loaded_address();
  if (name == "prefetch") {
    llvm::Value* p = loaded_address();
    // Read, keep in every cache level (locality 3), data.
    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {p->getType()}, {p, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
    return b_.getInt32(0);
  }
  if (name == "vload") {
    need(1);
    return b_.CreateAlignedLoad(type_of(op->dtype), emit(op->args[0]), llvm::Align(1));
  }
  if (name == "vstore") {
    need(2);
    b_.CreateAlignedStore(emit(op->args[1]), emit(op->args[0]), llvm::Align(1));
    return b_.getInt32(0);
  }
  if (name == "reinterpret") {
    need(1);
    llvm::Value* v = emit(op->args[0]);
    llvm::Type* to = type_of(op->dtype);
    if (v->getType()->getPrimitiveSizeInBits() != to->getPrimitiveSizeInBits()) {
      fail("reinterpret changes the size: " + ir::to_string(op->args[0]) + " as " + op->dtype.to_string());
    }
    return b_.CreateBitCast(v, to);
  }
  if (name.rfind("llvm.", 0) != 0) return nullptr;
  llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID(name);
  if (id == llvm::Intrinsic::not_intrinsic) fail("LLVM has no intrinsic '" + name + "'");
  if (llvm::Intrinsic::isOverloaded(id)) fail("overloaded LLVM intrinsic '" + name + "' is not supported; name a fixed one");
  llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, id);
  llvm::FunctionType* fty = f->getFunctionType();
  if (fty->getNumParams() != op->args.size()) fail("'" + name + "' takes " + std::to_string(fty->getNumParams()) + " arguments");
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < op->args.size(); ++i) {
    llvm::Value* v = emit(op->args[i]);
    llvm::Type* want = fty->getParamType(static_cast<unsigned>(i));
    if (v->getType() != want) {
      if (v->getType()->getPrimitiveSizeInBits() != want->getPrimitiveSizeInBits()) {
        fail("argument " + std::to_string(i) + " of '" + name + "' has the wrong size: " + ir::to_string(op->args[i]));
      }
      v = b_.CreateBitCast(v, want);
    }
    args.push_back(v);
  }
  llvm::Value* r = b_.CreateCall(f, args);
  llvm::Type* ret = type_of(op->dtype);
  return r->getType() == ret ? r : b_.CreateBitCast(r, ret);
}

// The VNNI instruction for `lanes` int32 lanes on this target, or null.
const char* CodeGen::vnni_intrinsic(int lanes) const {
  if (!target_.is_x86()) return nullptr;
  bool vnni512 = target_.has_feature("avx512vnni");
  bool narrow = (vnni512 && target_.has_feature("avx512vl")) || target_.has_feature("avxvnni");
  if (lanes == 16 && vnni512) return "llvm.x86.avx512.vpdpbusd.512";
  if (lanes == 8 && narrow) return "llvm.x86.avx512.vpdpbusd.256";
  if (lanes == 4 && narrow) return "llvm.x86.avx512.vpdpbusd.128";
  return nullptr;
}

// dot_u8s8x4(a, b) (+ acc): per int32 lane, the 4 unsigned bytes of a times the 4
// signed bytes of b, summed. One vpdpbusd where the target has VNNI; elsewhere exact
// 16-bit products (|u8 * s8| < 2^15) added in pairs, which x86 selects as pmaddwd.
llvm::Value* CodeGen::emit_dot_u8s8x4(const ir::CallNode* op, llvm::Value* acc) {
  if (op->args.size() != 2) fail("intrinsic 'dot_u8s8x4' takes 2 arguments");
  int lanes = op->dtype.lanes();
  llvm::Value* a = splat_if_needed(emit(op->args[0]), lanes);
  llvm::Value* b = splat_if_needed(emit(op->args[1]), lanes);
  llvm::Type* words = a->getType();
  if (const char* name = vnni_intrinsic(lanes)) {
    llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID(name);
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, id);
    return b_.CreateCall(f, {acc ? acc : llvm::Constant::getNullValue(words), a, b});
  }
  unsigned n = static_cast<unsigned>(lanes);
  llvm::Type* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * n);
  llvm::Type* halves = llvm::FixedVectorType::get(b_.getInt16Ty(), 4 * n);
  llvm::Value* wa = b_.CreateZExt(b_.CreateBitCast(a, bytes), halves);
  llvm::Value* wb = b_.CreateSExt(b_.CreateBitCast(b, bytes), halves);
  // Lanes [from, from + count) of v, or its even (odd) lanes of 2 * count.
  auto lanes_of = [&](llvm::Value* v, unsigned from, unsigned count, unsigned step) {
    std::vector<int> mask;
    for (unsigned i = 0; i < count; ++i) mask.push_back(static_cast<int>(from + step * i));
    return b_.CreateShuffleVector(v, mask);
  };
  // pmaddwd: 16-bit products added in pairs into int32; per word, two such sums.
  const char* pmadd = nullptr;
  if (target_.is_x86() && lanes == 16 && target_.has_feature("avx512bw")) pmadd = "llvm.x86.avx512.pmaddw.d.512";
  if (target_.is_x86() && lanes == 8 && target_.has_feature("avx2")) pmadd = "llvm.x86.avx2.pmadd.wd";
  unsigned width = 2 * n;  // int16 lanes of one pmaddwd: half the products
  llvm::Value* pairs;  // 2n int32: products of bytes 2i and 2i+1 summed
  if (pmadd) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&mod_, llvm::Function::lookupIntrinsicID(pmadd));
    llvm::Value* lo = b_.CreateCall(f, {lanes_of(wa, 0, width, 1), lanes_of(wb, 0, width, 1)});
    llvm::Value* hi = b_.CreateCall(f, {lanes_of(wa, width, width, 1), lanes_of(wb, width, width, 1)});
    std::vector<int> both;
    for (unsigned i = 0; i < 2 * n; ++i) both.push_back(static_cast<int>(i));
    pairs = b_.CreateShuffleVector(lo, hi, both);
  } else {
    llvm::Type* wide = llvm::FixedVectorType::get(b_.getInt32Ty(), 2 * n);
    llvm::Value* prod = b_.CreateMul(wa, wb);  // exact: |u8 * s8| < 2^15
    pairs = b_.CreateAdd(b_.CreateSExt(lanes_of(prod, 0, 2 * n, 2), wide), b_.CreateSExt(lanes_of(prod, 1, 2 * n, 2), wide));
  }
  llvm::Value* r = b_.CreateAdd(lanes_of(pairs, 0, n, 2), lanes_of(pairs, 1, n, 2));
  if (lanes == 1) r = b_.CreateExtractElement(r, uint64_t{0});
  return acc ? b_.CreateAdd(acc, r) : r;
}

// A lane reduction (ir::lane_reduction_kind): the vector's high half combined with its
// low half until one lane is left; x86 selects each step as one extract or shuffle and
// one vector operation, log2(lanes) dependent steps where a serial loop took lanes.
llvm::Value* CodeGen::emit_lane_reduction(const ir::CallNode* op, NodeKind kind) {
  if (op->args.size() != 1) fail("intrinsic '" + op->name + "' takes 1 argument");
  DataType vt = op->args[0].dtype();
  int n = vt.lanes();
  if (op->dtype.lanes() != 1 || n < 2 || (n & (n - 1))) fail("a lane reduction takes a vector of 2^n lanes to a scalar: " + op->name + " of " + vt.to_string());
  DataType e = vt.element_of();
  llvm::Value* v = emit(op->args[0]);
  for (; n > 1; n /= 2) {
    llvm::Value *a, *b;
    if (n == 2) {  // the last step on scalars
      a = b_.CreateExtractElement(v, uint64_t{0});
      b = b_.CreateExtractElement(v, uint64_t{1});
    } else {
      std::vector<int> lo, hi;
      for (int l = 0; l < n / 2; ++l) {
        lo.push_back(l);
        hi.push_back(l + n / 2);
      }
      a = b_.CreateShuffleVector(v, lo);
      b = b_.CreateShuffleVector(v, hi);
    }
    if (e.is_float()) {
      v = float_binary(kind, a, b, e.with_lanes(n / 2));
    } else if (kind == NodeKind::Add) {
      v = b_.CreateAdd(a, b);
    } else {
      bool s = e.is_int();
      auto id = kind == NodeKind::Max ? (s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax) : (s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
      v = b_.CreateBinaryIntrinsic(id, a, b);
    }
  }
  return v;
}

llvm::Value* CodeGen::emit_call(const ir::CallNode* op) {
  const std::string& name = op->name;
  DataType t = op->dtype;
  int lanes = t.lanes();
  auto arg = [&](size_t i) {
    if (i >= op->args.size()) fail("intrinsic '" + name + "' needs " + std::to_string(i + 1) + " arguments");
    return splat_if_needed(emit(op->args[i]), lanes);
  };
  if (llvm::Value* v = emit_low_level_call(op)) return v;
  if (std::optional<NodeKind> k = ir::lane_reduction_kind(name)) return emit_lane_reduction(op, *k);
  if (name == "dot_u8s8x4") return emit_dot_u8s8x4(op, nullptr);
  if (name == "likely") {
    llvm::Value* c = arg(0);
    if (c->getType()->isIntegerTy(1)) return b_.CreateIntrinsic(llvm::Intrinsic::expect, {c->getType()}, {c, b_.getTrue()});
    return c;
  }
  DataType e = t.element_of();
  if (e.is_float()) {
    llvm::Type* f64 = with_lanes(b_.getDoubleTy(), lanes);
    auto in_double = [&](llvm::Value* v) { return v->getType() == f64 ? v : b_.CreateFPExt(v, f64); };
    auto exact = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, arg(0)); };
    if (name == "abs") return exact(llvm::Intrinsic::fabs);
    if (name == "floor") return exact(llvm::Intrinsic::floor);
    if (name == "ceil") return exact(llvm::Intrinsic::ceil);
    if (name == "round") return exact(llvm::Intrinsic::roundeven);
    if (name == "trunc") return exact(llvm::Intrinsic::trunc);
    if (name == "sqrt") {
      // One correctly rounded square root: in the value's own precision (f16/bf16 via float, exact).
      return round_to(exact(llvm::Intrinsic::sqrt), t);
    }
    if (name == "min" || name == "max") {
      llvm::Value* a = arg(0);
      llvm::Value* b = arg(1);
      return name == "min" ? b_.CreateSelect(b_.CreateFCmpOLT(b, a), b, a) : b_.CreateSelect(b_.CreateFCmpOGT(b, a), b, a);
    }
    if (name == "fma") {
      llvm::Value* r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {type_of(t)}, {arg(0), arg(1), arg(2)});
      return round_to(r, t);
    }
    // Transcendentals: in double through libm, rounded once to the type (so float32
    // results equal the reference interpreter's), unless the type is double.
    static const char* const libm_names[] = {"exp",  "log",  "tanh", "erf",  "pow",  "log2",  "exp2",  "log10",
                                             "sin",  "cos",  "tan",  "asin", "acos", "atan",  "sinh",  "cosh",
                                             "asinh", "acosh", "atanh"};
    const char* libm = nullptr;
    for (const char* n : libm_names)
      if (name == n) libm = n;
    if (libm && target_.vector_libm && lanes > 1 && e.bits() <= 32) {
      std::vector<llvm::Value*> xs{arg(0)};
      if (name == "pow") xs.push_back(arg(1));
      if (llvm::Value* r = libmvec_call(std::string(libm) + "f", xs, lanes)) return round_to(r, t);
    }
    if (libm) {
      llvm::Value* x = in_double(arg(0));
      llvm::Value* y = name == "pow" ? in_double(arg(1)) : nullptr;
      return round_to(double_libcall(libm, x, y, lanes), t);
    }
    if (name == "sigmoid" && target_.vector_libm && lanes > 1 && e.bits() <= 32) {
      llvm::Value* x = arg(0);
      if (llvm::Value* ex = libmvec_call("expf", {b_.CreateFNeg(x)}, lanes)) {
        llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
        return round_to(b_.CreateFDiv(one, b_.CreateFAdd(one, ex)), t);
      }
    }
    if (name == "sigmoid") {
      llvm::Value* x = in_double(arg(0));
      llvm::FastMathFlags saved = b_.getFastMathFlags();
      b_.clearFastMathFlags();
      llvm::Value* ex = double_libcall("exp", b_.CreateFNeg(x), nullptr, lanes);
      llvm::Value* one = llvm::ConstantFP::get(f64, 1.0);
      llvm::Value* r = b_.CreateFDiv(one, b_.CreateFAdd(one, ex));
      b_.setFastMathFlags(saved);
      return round_to(r, t);
    }
    fail("intrinsic '" + name + "' is not defined on " + e.to_string());
  }
  // Integers.
  if (name == "abs") {
    if (e.is_uint()) return arg(0);
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, arg(0), b_.getFalse());
  }
  if (name == "floor" || name == "ceil" || name == "round" || name == "trunc") return arg(0);
  if (name == "min" || name == "max") {
    bool s = e.is_int();
    auto id = name == "min" ? (s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin) : (s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax);
    return b_.CreateBinaryIntrinsic(id, arg(0), arg(1));
  }
  if (name == "bitwise_and") return b_.CreateAnd(arg(0), arg(1));
  if (name == "bitwise_or") return b_.CreateOr(arg(0), arg(1));
  if (name == "bitwise_xor") return b_.CreateXor(arg(0), arg(1));
  if (name == "shift_left" || name == "shift_right") {
    llvm::Value* x = arg(0);
    DataType yt = op->args[1].dtype().element_of().with_lanes(lanes);
    const int64_t* c = const_int_of(op->args[1]);
    if (c && *c >= 0 && *c < e.bits()) {
      llvm::Value* amount = llvm::ConstantInt::get(x->getType(), static_cast<uint64_t>(*c));
      if (name == "shift_left") return b_.CreateShl(x, amount);
      return e.is_int() ? b_.CreateAShr(x, amount) : b_.CreateLShr(x, amount);
    }
    // Amounts as the interpreter reads them: the value's 64-bit pattern, unsigned.
    llvm::Value* x64 = to_i64(x, t);
    llvm::Value* y64 = to_i64(arg(1), yt);
    llvm::Type* i64 = x64->getType();
    llvm::Value* sixty_three = llvm::ConstantInt::get(i64, 63);
    llvm::Value* too_far = b_.CreateICmpUGT(y64, sixty_three);
    llvm::Value* amount = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, y64, sixty_three);
    llvm::Value* r;
    if (name == "shift_left") {
      r = b_.CreateSelect(too_far, llvm::Constant::getNullValue(i64), b_.CreateShl(x64, amount));
    } else if (e.is_int()) {
      r = b_.CreateAShr(x64, amount);
    } else {
      r = b_.CreateSelect(too_far, llvm::Constant::getNullValue(i64), b_.CreateLShr(x64, amount));
    }
    return e.bits() == 64 ? r : b_.CreateTrunc(r, type_of(t));
  }
  fail("intrinsic '" + name + "' is not defined on " + e.to_string());
}

llvm::Value* CodeGen::emit_load(const ir::LoadNode* op) {
  DataType t = op->dtype;
  DataType elem = t.element_of();
  llvm::Value* base = buffer(op->buffer_var);
  llvm::Type* st = storage_type(elem);
  llvm::Align align(static_cast<uint64_t>(elem.storage_bytes()));
  int lanes = t.lanes();
  if (lanes == 1) {
    llvm::LoadInst* ld = b_.CreateAlignedLoad(st, element_ptr(base, elem, index_value(op->index)), align);
    return from_storage(ld, t);
  }
  if (const auto* ramp = op->index.as<ir::RampNode>()) {
    if (is_const_int(ramp->stride, 1)) {
      llvm::Value* p = element_ptr(base, elem, index_value(ramp->base));
      return from_storage(b_.CreateAlignedLoad(with_lanes(st, lanes), p, align), t);
    }
  }
  if (const auto* bc = op->index.as<ir::BroadcastNode>()) {
    llvm::Value* s = b_.CreateAlignedLoad(st, element_ptr(base, elem, index_value(bc->value)), align);
    return from_storage(b_.CreateVectorSplat(static_cast<unsigned>(lanes), s), t);
  }
  llvm::Value* ptrs = element_ptr(base, elem, index_value(op->index));
  llvm::Value* mask = llvm::Constant::getAllOnesValue(with_lanes(b_.getInt1Ty(), lanes));
  return from_storage(b_.CreateMaskedGather(with_lanes(st, lanes), ptrs, align, mask), t);
}

// ---------------------------------------------------------------- statements

void CodeGen::emit(const Stmt& s) {
  switch (s.kind()) {
    case NodeKind::For: {
      auto* p = s.as<ir::ForNode>();
      if (p->for_kind == ir::ForKind::Parallel) return emit_parallel_for(p);
      return emit_for(p);
    }
    case NodeKind::Store: return emit_store(s.as<ir::StoreNode>());
    case NodeKind::Allocate: return emit_allocate(s.as<ir::AllocateNode>());
    case NodeKind::IfThenElse: {
      auto* p = s.as<ir::IfThenElseNode>();
      llvm::Value* c = emit(p->cond);
      if (c->getType()->isVectorTy()) fail("an if statement needs a scalar condition: " + ir::to_string(p->cond));
      if (!c->getType()->isIntegerTy(1)) c = b_.CreateICmpNE(c, llvm::Constant::getNullValue(c->getType()));
      llvm::Function* fn = b_.GetInsertBlock()->getParent();
      llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn);
      llvm::BasicBlock* else_bb = p->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", fn) : nullptr;
      llvm::BasicBlock* end_bb = llvm::BasicBlock::Create(ctx_, "endif", fn);
      b_.CreateCondBr(c, then_bb, else_bb ? else_bb : end_bb);
      b_.SetInsertPoint(then_bb);
      emit(p->then_case);
      b_.CreateBr(end_bb);
      if (else_bb) {
        b_.SetInsertPoint(else_bb);
        emit(p->else_case);
        b_.CreateBr(end_bb);
      }
      b_.SetInsertPoint(end_bb);
      return;
    }
    case NodeKind::Seq:
      for (const Stmt& c : s.as<ir::SeqNode>()->seq) emit(c);
      return;
    case NodeKind::LetStmt: {
      auto* p = s.as<ir::LetStmtNode>();
      vars_[p->var.get()] = emit(p->value);
      emit(p->body);
      return;
    }
    case NodeKind::Attr: return emit(s.as<ir::AttrNode>()->body);
    case NodeKind::Evaluate: {
      const Expr& v = s.as<ir::EvaluateNode>()->value;
      if (!v.as<ir::IntImmNode>()) emit(v);
      return;
    }
    default:
      fail(std::string("the CPU backend compiles lowered IR; found a ") + ir::kind_name(s.kind()) + " statement");
  }
}

void CodeGen::emit_store(const ir::StoreNode* op) {
  DataType vt = op->value.dtype();
  int lanes = op->index.dtype().lanes();
  DataType elem = vt.element_of();
  DataType t = elem.with_lanes(lanes);
  llvm::Value* base = buffer(op->buffer_var);
  llvm::Value* v = to_storage(splat_if_needed(emit(op->value), lanes), t);
  llvm::Align align(static_cast<uint64_t>(elem.storage_bytes()));
  if (lanes == 1) {
    b_.CreateAlignedStore(v, element_ptr(base, elem, index_value(op->index)), align);
    return;
  }
  if (const auto* ramp = op->index.as<ir::RampNode>()) {
    if (is_const_int(ramp->stride, 1)) {
      b_.CreateAlignedStore(v, element_ptr(base, elem, index_value(ramp->base)), align);
      return;
    }
  }
  llvm::Value* ptrs = element_ptr(base, elem, index_value(op->index));
  llvm::Value* mask = llvm::Constant::getAllOnesValue(with_lanes(b_.getInt1Ty(), lanes));
  b_.CreateMaskedScatter(v, ptrs, align, mask);
}

void CodeGen::emit_allocate(const ir::AllocateNode* op) {
  DataType elem = op->dtype.element_of();
  llvm::Type* st = storage_type(elem);
  const int64_t* n = ir::as_const_int(op->extent);
  int64_t bytes = n ? *n * elem.storage_bytes() : -1;
  if (n && bytes <= kMaxStackBytes) {
    vars_[op->buffer_var.get()] = entry_alloca(st, b_.getInt64(static_cast<uint64_t>(std::max<int64_t>(*n, 1))), op->buffer_var.name());
    emit(op->body);
    return;
  }
  // Heap: kiln_workspace_alloc(round_up(bytes, 64) + 64) ... kiln_workspace_free (the
  // runtime's cache of such buffers, runtime/workspace.h; 64-byte aligned).
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Value* count = to_i64(emit(op->extent), op->extent.dtype());
  llvm::Value* size = b_.CreateMul(count, b_.getInt64(static_cast<uint64_t>(elem.storage_bytes())));
  size = b_.CreateAnd(b_.CreateAdd(size, b_.getInt64(kAllocAlign - 1 + kAllocAlign)), b_.getInt64(~static_cast<uint64_t>(kAllocAlign - 1)));
  llvm::FunctionCallee alloc = mod_.getOrInsertFunction("kiln_workspace_alloc", llvm::FunctionType::get(b_.getPtrTy(), {i64}, false));
  llvm::FunctionCallee dealloc =
      mod_.getOrInsertFunction("kiln_workspace_free", llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false));
  llvm::Value* p = b_.CreateCall(alloc, {size}, op->buffer_var.name());
  check(b_.CreateIsNull(p), kErrOutOfMemory);
  vars_[op->buffer_var.get()] = p;
  emit(op->body);
  b_.CreateCall(dealloc, {p});
}

void CodeGen::emit_for(const ir::ForNode* op) {
  if (op->for_kind == ir::ForKind::ThreadBinding) {
    fail("loop '" + op->var.name() + "' is bound to " + op->thread_tag + ", which the CPU backend cannot run");
  }
  llvm::Value* begin = emit(op->min);
  llvm::Value* extent = emit(op->extent);
  emit_loop(op->var, begin, b_.CreateAdd(begin, extent, "", false, /*HasNSW=*/op->var.dtype().is_int()), op->for_kind, op->body);
}

void CodeGen::emit_loop(const ir::Var& var, llvm::Value* begin, llvm::Value* end, ir::ForKind kind, const Stmt& body) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "for_" + var.name(), fn);
  llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(ctx_, "body_" + var.name(), fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "end_" + var.name(), fn);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(begin->getType(), 2, var.name());
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  vars_[var.get()] = i;
  emit(body);
  llvm::Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(i->getType(), 1), "", /*HasNUW=*/false, /*HasNSW=*/true);
  llvm::BranchInst* back = b_.CreateBr(header);
  i->addIncoming(next, b_.GetInsertBlock());
  // Loop metadata: what the schedule asked for, so LLVM's passes follow it.
  std::vector<llvm::Metadata*> md{nullptr, llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.mustprogress"))};
  if (kind == ir::ForKind::Unrolled) {
    md.push_back(llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.unroll.full")));
  } else if (kind == ir::ForKind::Vectorized) {
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                          llvm::ConstantAsMetadata::get(b_.getTrue())}));
  }
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, md);
  loop_id->replaceOperandWith(0, loop_id);
  back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  b_.SetInsertPoint(exit);
  vars_.erase(var.get());
}

// A parallel loop: its body becomes a task function over a chunk of the iterations,
// launched on the runtime's thread pool with the free variables in a closure.
void CodeGen::emit_parallel_for(const ir::ForNode* op) {
  // The free variables of the loop: what the body uses that is defined outside it.
  std::vector<const ir::VarNode*> used;
  std::unordered_set<const ir::VarNode*> seen, defined{op->var.get()};
  auto use = [&](const ir::VarNode* v) {
    if (seen.insert(v).second) used.push_back(v);
  };
  ir::post_order_visit(op->body, [&](const ir::Node* n) {
    switch (n->kind) {
      case NodeKind::Var: use(static_cast<const ir::VarNode*>(n)); break;
      case NodeKind::Load: use(static_cast<const ir::LoadNode*>(n)->buffer_var.get()); break;
      case NodeKind::Store: use(static_cast<const ir::StoreNode*>(n)->buffer_var.get()); break;
      case NodeKind::For: defined.insert(static_cast<const ir::ForNode*>(n)->var.get()); break;
      case NodeKind::LetStmt: defined.insert(static_cast<const ir::LetStmtNode*>(n)->var.get()); break;
      case NodeKind::Let: defined.insert(static_cast<const ir::LetNode*>(n)->var.get()); break;
      case NodeKind::Allocate: defined.insert(static_cast<const ir::AllocateNode*>(n)->buffer_var.get()); break;
      default: break;
    }
  });
  std::vector<const ir::VarNode*> captured;
  for (const ir::VarNode* v : used) {
    if (defined.count(v)) continue;
    if (!vars_.count(v)) fail("variable '" + v->name + "' is used in parallel loop '" + op->var.name() + "' where it is not defined");
    captured.push_back(v);
  }
  llvm::Value* begin = emit(op->min);
  llvm::Value* extent = emit(op->extent);
  llvm::Type* ity = begin->getType();

  // Closure: {begin, extent, captured...}.
  std::vector<llvm::Type*> fields{ity, ity};
  for (const ir::VarNode* v : captured) fields.push_back(vars_[v]->getType());
  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);
  llvm::AllocaInst* closure = entry_alloca(closure_ty, nullptr, "closure");
  b_.CreateStore(begin, b_.CreateStructGEP(closure_ty, closure, 0));
  b_.CreateStore(extent, b_.CreateStructGEP(closure_ty, closure, 1));
  for (size_t i = 0; i < captured.size(); ++i) {
    b_.CreateStore(vars_[captured[i]], b_.CreateStructGEP(closure_ty, closure, static_cast<unsigned>(i + 2)));
  }

  // The loop over [lo, hi) with the captured values as parameters (pointers noalias,
  // as they are distinct buffers): inlined into the task function.
  std::string base_name = func_name_ + "_parallel_" + std::to_string(parallel_count_++);
  std::vector<llvm::Type*> body_params{ity, ity};
  for (const ir::VarNode* v : captured) body_params.push_back(vars_[v]->getType());
  llvm::Function* body_fn = llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), body_params, false),
                                                   llvm::Function::InternalLinkage, base_name + "_body", mod_);
  set_function_attrs(body_fn);
  body_fn->addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::Function* task_fn = llvm::Function::Create(
      llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), b_.getInt32Ty(), b_.getPtrTy()}, false),
      llvm::Function::InternalLinkage, base_name, mod_);
  set_function_attrs(task_fn);

  // Save the state of the enclosing function.
  llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
  auto saved_vars = vars_;

  // Body function.
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", body_fn);
  b_.SetInsertPoint(entry);
  for (size_t i = 0; i < captured.size(); ++i) {
    llvm::Argument* a = body_fn->getArg(static_cast<unsigned>(i + 2));
    a->setName(captured[i]->name);
    if (a->getType()->isPointerTy()) a->addAttr(llvm::Attribute::NoAlias);
    vars_[captured[i]] = a;
  }
  emit_loop(op->var, body_fn->getArg(0), body_fn->getArg(1), ir::ForKind::Serial, op->body);
  b_.CreateRet(b_.getInt32(0));

  // Task function: chunk t of n covers [begin + t*c, min(begin + (t+1)*c, begin + extent)).
  llvm::BasicBlock* tentry = llvm::BasicBlock::Create(ctx_, "entry", task_fn);
  b_.SetInsertPoint(tentry);
  llvm::Value* cl = task_fn->getArg(2);
  llvm::Value* lo = b_.CreateLoad(ity, b_.CreateStructGEP(closure_ty, cl, 0));
  llvm::Value* ext = b_.CreateLoad(ity, b_.CreateStructGEP(closure_ty, cl, 1));
  llvm::Value* task = b_.CreateSExtOrTrunc(task_fn->getArg(0), ity);
  llvm::Value* ntask = b_.CreateSExtOrTrunc(task_fn->getArg(1), ity);
  llvm::Value* chunk = b_.CreateSDiv(b_.CreateSub(b_.CreateAdd(ext, ntask), llvm::ConstantInt::get(ity, 1)), ntask);
  llvm::Value* start = b_.CreateAdd(lo, b_.CreateMul(task, chunk));
  llvm::Value* stop = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(start, chunk), b_.CreateAdd(lo, ext));
  std::vector<llvm::Value*> call_args{start, stop};
  for (size_t i = 0; i < captured.size(); ++i) {
    call_args.push_back(b_.CreateLoad(fields[i + 2], b_.CreateStructGEP(closure_ty, cl, static_cast<unsigned>(i + 2))));
  }
  b_.CreateRet(b_.CreateCall(body_fn, call_args));

  // Back in the enclosing function: launch, and pass a task's fault on.
  vars_ = std::move(saved_vars);
  b_.restoreIP(saved_ip);
  llvm::FunctionCallee launch = mod_.getOrInsertFunction(
      "kiln_parallel_launch", llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty()}, false));
  llvm::Value* rc = b_.CreateCall(launch, {task_fn, closure, b_.getInt32(target_.num_cores)});
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* err = llvm::BasicBlock::Create(ctx_, "task_fault", fn);
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "after_parallel", fn);
  b_.CreateCondBr(b_.CreateICmpNE(rc, b_.getInt32(0)), err, ok);
  b_.SetInsertPoint(err);
  b_.CreateRet(rc);
  b_.SetInsertPoint(ok);
}

}  // namespace

// ---------------------------------------------------------------- module-level

std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& t) {
  ensure_llvm_initialized();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) throw CompileError("cpu: unknown target triple '" + t.triple + "': " + err);
  llvm::TargetOptions opts;
  auto level = t.opt_level == 0 ? llvm::CodeGenOptLevel::None
               : t.opt_level == 1 ? llvm::CodeGenOptLevel::Less
               : t.opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                  : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(t.triple, t.cpu, t.feature_string(), opts,
                                                                      llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) throw CompileError("cpu: LLVM cannot make a target machine for '" + t.to_string() + "'");
  return tm;
}

std::unique_ptr<llvm::Module> codegen_module(const std::vector<schedule::LoweredFunc>& funcs, const Target& t,
                                             llvm::TargetMachine& tm, llvm::LLVMContext& ctx) {
  auto m = std::make_unique<llvm::Module>(funcs.empty() ? "kiln" : funcs[0].name, ctx);
  m->setTargetTriple(t.triple);
  m->setDataLayout(tm.createDataLayout());
  CodeGen cg(ctx, *m, t);
  for (const schedule::LoweredFunc& f : funcs) cg.add_function(f);
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*m, &os)) throw CompileError("cpu codegen produced invalid LLVM IR (a Kiln bug): " + os.str());
  return m;
}

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level == 0   ? llvm::OptimizationLevel::O0
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = opt_level == 0 ? pb.buildO0DefaultPipeline(level) : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

namespace {
std::string emit_file(llvm::Module& m, llvm::TargetMachine& tm, llvm::CodeGenFileType type) {
  llvm::SmallString<0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type)) throw CompileError("cpu: LLVM cannot emit this file type for the target");
  pm.run(m);
  return std::string(buf.begin(), buf.end());
}
}  // namespace

std::string emit_object(llvm::Module& m, llvm::TargetMachine& tm) { return emit_file(m, tm, llvm::CodeGenFileType::ObjectFile); }
std::string emit_assembly(llvm::Module& m, llvm::TargetMachine& tm) { return emit_file(m, tm, llvm::CodeGenFileType::AssemblyFile); }

}  // namespace kiln::cpu
