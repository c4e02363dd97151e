#include "compiler/passes/vectorize_loop.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/ir/structural.h"
#include "compiler/support/error.h"

namespace kiln::passes {

namespace {

// Widens one loop body: the loop variable becomes ramp(min, 1, lanes). Gives up
// (failed = true) on what cannot be a vector: a scalar store of a vector value, a
// vector condition, an allocation inside the loop.
class Vectorizer : public ir::IRMutator {
 public:
  Vectorizer(const ir::Var& v, ir::Expr ramp) : var_(v), ramp_(std::move(ramp)), lanes_(ramp_.dtype().lanes()) {}
  using IRMutator::mutate;
  bool failed = false;

 protected:
  ir::Expr mutate_(const ir::VarNode* op, const ir::Expr& self) override {
    if (op == var_.get()) return ramp_;
    auto it = lets_.find(op);
    return it == lets_.end() ? self : it->second;
  }

#define KILN_BIN(N)                                                   \
  ir::Expr mutate_(const ir::N##Node* op, const ir::Expr& self) override { \
    ir::Expr a = mutate(op->a), b = mutate(op->b);                    \
    if (a.same_as(op->a) && b.same_as(op->b)) return self;            \
    widen(&a, &b);                                                    \
    return ir::make_binary(ir::NodeKind::N, a, b);                    \
  }
  KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
  KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN

  ir::Expr mutate_(const ir::SelectNode* op, const ir::Expr& self) override {
    ir::Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    int n = std::max({c.dtype().lanes(), t.dtype().lanes(), f.dtype().lanes()});
    return ir::make_select(to_lanes(c, n), to_lanes(t, n), to_lanes(f, n));
  }
  ir::Expr mutate_(const ir::CallNode* op, const ir::Expr& self) override {
    std::vector<ir::Expr> args;
    if (!mutate_all(op->args, &args)) return self;
    int n = 1;
    for (const ir::Expr& a : args) n = std::max(n, a.dtype().lanes());
    for (ir::Expr& a : args) a = to_lanes(a, n);
    return ir::make_call(op->dtype.with_lanes(n), op->name, args);
  }
  ir::Expr mutate_(const ir::LetNode* op, const ir::Expr& self) override {
    ir::Expr v = mutate(op->value);
    if (v.dtype().is_scalar()) return IRMutator::mutate_(op, self);
    ir::Var nv(op->var.name(), v.dtype());
    lets_[op->var.get()] = nv;
    ir::Expr b = mutate(op->body);
    return ir::make_let(nv, v, b);
  }
  ir::Expr mutate_(const ir::ReduceNode*, const ir::Expr& self) override {
    failed = true;
    return self;
  }

  ir::Stmt mutate_(const ir::StoreNode* op, const ir::Stmt& self) override {
    ir::Expr v = mutate(op->value), i = mutate(op->index);
    if (i.dtype().is_scalar()) {  // every lane would write one element
      failed = true;
      return self;
    }
    return ir::make_store(op->buffer_var, to_lanes(v, lanes_), i);
  }
  ir::Stmt mutate_(const ir::IfThenElseNode* op, const ir::Stmt& self) override {
    if (mutate(op->cond).dtype().is_vector()) {
      failed = true;
      return self;
    }
    return IRMutator::mutate_(op, self);
  }
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    if (mutate(op->min).dtype().is_vector() || mutate(op->extent).dtype().is_vector()) {
      failed = true;
      return self;
    }
    return IRMutator::mutate_(op, self);
  }
  ir::Stmt mutate_(const ir::LetStmtNode* op, const ir::Stmt& self) override {
    ir::Expr v = mutate(op->value);
    if (v.dtype().is_scalar()) return IRMutator::mutate_(op, self);
    ir::Var nv(op->var.name(), v.dtype());
    lets_[op->var.get()] = nv;
    return ir::make_let_stmt(nv, v, mutate(op->body));
  }
  ir::Stmt mutate_(const ir::AllocateNode*, const ir::Stmt& self) override {
    failed = true;
    return self;
  }

 private:
  ir::Expr to_lanes(const ir::Expr& e, int n) {
    if (e.dtype().lanes() == n) return e;
    if (e.dtype().is_scalar()) return ir::make_broadcast(e, n);
    failed = true;
    return e;
  }
  void widen(ir::Expr* a, ir::Expr* b) {
    int n = std::max(a->dtype().lanes(), b->dtype().lanes());
    *a = to_lanes(*a, n);
    *b = to_lanes(*b, n);
  }

  ir::Var var_;
  ir::Expr ramp_;
  int lanes_;
  ir::VarMap lets_;
};

// A loop whose one statement accumulates into one element, s[i] = s[i] op f(v) with op
// a sum, max or min and s[i] independent of v, as a lane reduction of f's vector:
// s[i] = s[i] op vector_reduce_op(f(ramp)) (a row's maximum and sum over a vector of
// partial results, ops.cc's reduce_last_axis). Null where the loop is not one; f must
// not read s. A float sum is reassociated (ir::lane_reduction_kind's tree).
ir::Stmt lane_reduction(const ir::ForNode* loop, const ir::Expr& ramp) {
  const auto* st = loop->body.as<ir::StoreNode>();
  if (!st || ir::uses_var(st->index, loop->var)) return ir::Stmt();
  ir::NodeKind kind = st->value.kind();
  ir::Expr a, b;
  if (const auto* p = st->value.as<ir::AddNode>()) a = p->a, b = p->b;
  else if (const auto* p = st->value.as<ir::MaxNode>()) a = p->a, b = p->b;
  else if (const auto* p = st->value.as<ir::MinNode>()) a = p->a, b = p->b;
  else return ir::Stmt();
  auto is_element = [&](const ir::Expr& e) {
    const auto* ld = e.as<ir::LoadNode>();
    return ld && ld->buffer_var.same_as(st->buffer_var) && ir::structural_equal(ld->index, st->index);
  };
  if (!is_element(a)) std::swap(a, b);
  ir::DataType t = st->value.dtype();
  if (!is_element(a) || ir::uses_var(b, st->buffer_var) || t.is_vector() || t.is_bool() || t.is_handle()) return ir::Stmt();
  Vectorizer v(loop->var, ramp);
  ir::Expr wide = v.mutate(b);
  int lanes = ramp.dtype().lanes();
  if (v.failed || wide.dtype().lanes() != lanes || (lanes & (lanes - 1))) return ir::Stmt();
  return ir::make_store(st->buffer_var, ir::make_binary(kind, a, ir::make_call(t, ir::lane_reduction_name(kind), {wide})), st->index);
}

class LoopVectorizer : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* loop = s.as<ir::ForNode>();
    if (!loop || loop->for_kind != ir::ForKind::Vectorized) return s;
    const int64_t* n = ir::as_const_int(loop->extent);
    if (!n) throw CompileError("vectorize_loop: loop '" + loop->var.name() + "' has no constant extent");
    auto serial = [&] { return ir::make_for(loop->var, loop->min, loop->extent, ir::ForKind::Serial, loop->body); };
    if (*n <= 1) return serial();
    ir::Expr ramp = ir::make_ramp(loop->min, ir::make_int(1, loop->var.dtype()), static_cast<int>(*n));
    if (ir::Stmt r = lane_reduction(loop, ramp); r.defined()) return r;
    Vectorizer v(loop->var, ramp);
    ir::Stmt body = v.mutate(loop->body);
    if (v.failed) return serial();
    return body;
  }
};

}  // namespace

ir::Stmt vectorize_loop(const ir::Stmt& s) { return LoopVectorizer().mutate(s); }

}  // namespace kiln::passes
