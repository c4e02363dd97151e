#include "compiler/passes/loop_partition.h"

#include "compiler/ir/analyzer.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/ir/structural.h"

namespace kiln::passes {

namespace {

// likely(...) conditions inside a statement, with the loops between them and it.
class CondCollector : public ir::IRVisitor {
 public:
  using IRVisitor::visit;
  std::vector<ir::Expr> conds;
  std::vector<const ir::ForNode*> inner_loops;

 protected:
  void visit_(const ir::CallNode* op) override {
    if (op->name == "likely" && op->dtype.is_scalar()) conds.push_back(op->args[0]);
    IRVisitor::visit_(op);
  }
  void visit_(const ir::ForNode* op) override {
    inner_loops.push_back(op);
    IRVisitor::visit_(op);
  }
};

class ReplaceCond : public ir::IRMutator {
 public:
  ReplaceCond(const ir::Expr& c) : cond_(c) {}
  using IRMutator::mutate;

 protected:
  ir::Expr mutate_(const ir::CallNode* op, const ir::Expr& self) override {
    if (op->name == "likely" && ir::structural_equal(op->args[0], cond_)) return ir::make_bool(true);
    return IRMutator::mutate_(op, self);
  }

 private:
  const ir::Expr& cond_;
};

class Partitioner : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    an_.bind(op->var, ir::Range(op->min, op->extent));
    const int64_t* mn = ir::as_const_int(op->min);
    const int64_t* ext = ir::as_const_int(op->extent);
    if (mn && ext && op->for_kind != ir::ForKind::ThreadBinding) {
      if (ir::Stmt s = try_partition(op, *mn, *ext); s.defined()) return s;
    }
    return IRMutator::mutate_(op, self);
  }

 private:
  ir::Stmt try_partition(const ir::ForNode* op, int64_t mn, int64_t ext) {
    CondCollector c;
    c.visit(op->body);
    for (const ir::ForNode* inner : c.inner_loops) an_.bind(inner->var, ir::Range(inner->min, inner->extent));
    for (const ir::Expr& cond : c.conds) {
      if (!ir::uses_var(cond, op->var)) continue;
      int64_t split = 0;
      bool true_below = false;
      if (!split_point(cond, op->var, &split, &true_below)) continue;
      int64_t lo = mn, hi = mn + ext;
      // Where the condition holds on the whole loop, just drop it; where it holds
      // nowhere, this condition cannot help.
      bool holds_everywhere = true_below ? split >= hi : split <= lo;
      bool holds_nowhere = true_below ? split <= lo : split >= hi;
      if (holds_nowhere) continue;
      ir::Stmt proven = an_.simplify(ReplaceCond(cond).mutate(op->body));
      if (holds_everywhere) {
        return mutate(ir::make_for(op->var, op->min, op->extent, op->for_kind, proven, op->thread_tag));
      }
      ir::Stmt first = true_below ? proven : op->body;
      ir::Stmt second = true_below ? op->body : proven;
      auto loop = [&](int64_t a, int64_t b, const ir::Stmt& body) -> ir::Stmt {
        if (b <= a) return ir::Stmt();
        ir::Var v(op->var.name(), op->var.dtype());
        ir::Stmt nb = ir::substitute(body, op->var, v);
        return mutate(ir::make_for(v, ir::make_int(a, v.dtype()), ir::make_int(b - a, v.dtype()), op->for_kind, nb, op->thread_tag));
      };
      return ir::make_seq({loop(lo, split, first), loop(split, hi, second)});
    }
    return ir::Stmt();
  }

  // For cond linear in v: the v where it starts (true_below=false) or stops holding
  // for every value of the other variables.
  bool split_point(const ir::Expr& cond, const ir::Var& v, int64_t* split, bool* true_below) {
    ir::Expr d;  // cond <=> d < 0
    if (const auto* p = cond.as<ir::LTNode>()) d = p->a - p->b;
    else if (const auto* p = cond.as<ir::LENode>()) d = p->a - p->b - 1;
    else if (const auto* p = cond.as<ir::GTNode>()) d = p->b - p->a;
    else if (const auto* p = cond.as<ir::GENode>()) d = p->b - p->a - 1;
    else return false;
    if (!d.dtype().is_int()) return false;
    d = an_.simplify(d);
    // d = a*v + rest
    ir::Expr rest = an_.simplify(ir::substitute(d, v, ir::make_int(0, v.dtype())));
    ir::Expr av = an_.simplify(d - rest);
    ir::Expr a_expr = an_.simplify(ir::substitute(av, v, ir::make_int(1, v.dtype())));
    const int64_t* a = ir::as_const_int(a_expr);
    if (!a || *a == 0 || !ir::structural_equal(an_.simplify(a_expr * v), av)) return false;
    ir::ConstBound r = an_.const_bound(rest);
    if (*a > 0) {  // a*v + rest.max < 0  <=>  v <= floor((-rest.max - 1) / a)
      if (r.max == ir::ConstBound::kPosInf) return false;
      int64_t num = -r.max - 1;
      *split = (num >= 0 ? num / *a : -((-num + *a - 1) / *a)) + 1;
      *true_below = true;
    } else {  // a*v + rest.max < 0  <=>  v >= floor(rest.max / -a) + 1
      if (r.max == ir::ConstBound::kPosInf) return false;
      int64_t num = r.max, den = -*a;
      *split = (num >= 0 ? num / den : -((-num + den - 1) / den)) + 1;
      *true_below = false;
    }
    return true;
  }

  ir::Analyzer an_;
};

}  // namespace

ir::Stmt loop_partition(const ir::Stmt& s) { return Partitioner().mutate(s); }

}  // namespace kiln::passes
