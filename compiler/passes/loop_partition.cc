#include "compiler/passes/loop_partition.h"

#include "compiler/ir/analyzer.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/ir/structural.h"

namespace kiln::passes {

namespace {

// likely(...) conditions inside a statement, with the loops between them and it; those
// that guard statements (an if's: a tile's tail) apart from those that only choose a
// value (a select's: a padding's border).
class CondCollector : public ir::IRVisitor {
 public:
  using IRVisitor::visit;
  std::vector<ir::Expr> conds;
  std::vector<bool> guards;  // per condition: it guards statements
  std::vector<const ir::ForNode*> inner_loops;

 protected:
  void visit_(const ir::CallNode* op) override {
    if (op->name == "likely" && op->dtype.is_scalar()) {
      conds.push_back(op->args[0]);
      guards.push_back(in_guard_ > 0);
    }
    IRVisitor::visit_(op);
  }
  void visit_(const ir::ForNode* op) override {
    inner_loops.push_back(op);
    IRVisitor::visit_(op);
  }
  void visit_(const ir::IfThenElseNode* op) override {
    ++in_guard_;
    visit(op->cond);
    --in_guard_;
    visit(op->then_case);
    if (op->else_case.defined()) visit(op->else_case);
  }

 private:
  int in_guard_ = 0;
};

// likely(cond) -> `value` (true where the condition is proven, false where it is
// proven not to hold).
class ReplaceCond : public ir::IRMutator {
 public:
  ReplaceCond(const ir::Expr& c, bool value = true) : cond_(c), value_(value) {}
  using IRMutator::mutate;

 protected:
  ir::Expr mutate_(const ir::CallNode* op, const ir::Expr& self) override {
    if (op->name == "likely" && ir::structural_equal(op->args[0], cond_)) return ir::make_bool(value_);
    return IRMutator::mutate_(op, self);
  }

 private:
  const ir::Expr& cond_;
  bool value_;
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
    for (size_t ci = 0; ci < c.conds.size(); ++ci) {
      const ir::Expr& cond = c.conds[ci];
      if (!ir::uses_var(cond, op->var)) continue;
      int64_t split = 0;
      bool true_below = false, exact = false;
      if (!split_point(cond, op->var, &split, &true_below, &exact)) continue;
      int64_t lo = mn, hi = mn + ext;
      // Where the condition holds on the whole loop, just drop it; where it holds
      // nowhere, this condition cannot help, unless it is exact (it depends on the loop
      // alone): then it is false there.
      bool holds_everywhere = true_below ? split >= hi : split <= lo;
      bool holds_nowhere = true_below ? split <= lo : split >= hi;
      if (holds_nowhere && !exact) continue;
      ir::Stmt proven = an_.simplify(ReplaceCond(cond, !holds_nowhere).mutate(op->body));
      if (holds_everywhere || holds_nowhere) {
        return mutate(ir::make_for(op->var, op->min, op->extent, op->for_kind, proven, op->thread_tag));
      }
      if (!c.guards[ci] && op->for_kind == ir::ForKind::Serial && inside_border_part(cond)) continue;
      ir::Stmt rest = exact ? ReplaceCond(cond, false).mutate(op->body) : op->body;
      ir::Stmt first = true_below ? proven : rest;
      ir::Stmt second = true_below ? rest : proven;
      // Each part simplified with its own range (a clamp of the loop's index folds away
      // where the part stays inside the clamp's bounds).
      auto loop = [&](int64_t a, int64_t b, const ir::Stmt& body) -> ir::Stmt {
        if (b <= a) return ir::Stmt();
        ir::Var v(op->var.name(), op->var.dtype());
        an_.bind(v, a, b - 1);
        ir::Stmt nb = an_.simplify(ir::substitute(body, op->var, v));
        if (b - a == 1) border_vars_.push_back(v);
        ir::Stmt r =
            mutate(ir::make_for(v, ir::make_int(a, v.dtype()), ir::make_int(b - a, v.dtype()), op->for_kind, nb, op->thread_tag));
        if (b - a == 1) border_vars_.pop_back();
        return r;
      };
      return ir::make_seq({loop(lo, split, first), loop(split, hi, second)});
    }
    return ir::Stmt();
  }

  // For cond linear in v: the v where it starts (true_below=false) or stops holding
  // for every value of the other variables; `exact` where it holds or fails alike for
  // every value of them (it depends on v alone). A floor division of the linear part by
  // a positive constant counts (v / c < b <=> v < b * c): a fused loop's outer index.
  bool split_point(const ir::Expr& cond, const ir::Var& v, int64_t* split, bool* true_below, bool* exact) {
    ir::Expr d;  // cond <=> d < 0
    if (const auto* p = cond.as<ir::LTNode>()) d = p->a - p->b;
    else if (const auto* p = cond.as<ir::LENode>()) d = p->a - p->b - 1;
    else if (const auto* p = cond.as<ir::GTNode>()) d = p->b - p->a;
    else if (const auto* p = cond.as<ir::GENode>()) d = p->b - p->a - 1;
    else return false;
    if (!d.dtype().is_int()) return false;
    d = an_.simplify(d);
    // d = q / c + r (or r - q / c), r free of v: d < 0 <=> q / c < -r <=> q < -r * c
    // (or q / c > r <=> q >= (r + 1) * c).
    auto divided = [&](const ir::Expr& e, bool negated) -> bool {
      const auto* dv = e.as<ir::DivNode>();
      if (!dv || !ir::uses_var(dv->a, v)) return false;
      const int64_t* c = ir::as_const_int(dv->b);
      if (!c || *c <= 0) return false;
      ir::Expr r = an_.simplify(d - (negated ? ir::Expr(ir::make_int(0, d.dtype())) - e : e));
      if (ir::uses_var(r, v)) return false;
      ir::Expr cc = ir::make_int(*c, d.dtype());
      d = an_.simplify(negated ? (r + ir::make_int(1, d.dtype())) * cc - dv->a - ir::make_int(1, d.dtype()) : dv->a + r * cc);
      return true;
    };
    if (const auto* add = d.as<ir::AddNode>()) {
      if (!divided(add->a, false)) divided(add->b, false);
    } else if (const auto* sub = d.as<ir::SubNode>()) {
      if (!divided(sub->a, false)) divided(sub->b, true);
    } else {
      divided(d, false);
    }
    // d = a*v + rest
    ir::Expr rest = an_.simplify(ir::substitute(d, v, ir::make_int(0, v.dtype())));
    ir::Expr av = an_.simplify(d - rest);
    ir::Expr a_expr = an_.simplify(ir::substitute(av, v, ir::make_int(1, v.dtype())));
    const int64_t* a = ir::as_const_int(a_expr);
    if (!a || *a == 0 || !ir::structural_equal(an_.simplify(a_expr * v), av)) return false;
    ir::ConstBound r = an_.const_bound(rest);
    *exact = r.is_const();
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

  // Inside a part of one iteration (a padded image's first or last row of tiles), a
  // serial loop is not split by a select's condition that does not involve that part's
  // variable: it stays a select there, where a split would copy the loop's body for the
  // border's few iterations (a depthwise filter's rows and columns: 9 copies of its
  // tile, 5 so). A condition of the part's variable, a guard of statements (a tile's
  // tail) and a vector, unrolled or parallel loop still split.
  bool inside_border_part(const ir::Expr& cond) const {
    if (border_vars_.empty()) return false;
    for (const ir::Var& v : border_vars_)
      if (ir::uses_var(cond, v)) return false;
    return true;
  }

  ir::Analyzer an_;
  std::vector<ir::Var> border_vars_;  // the variables of the parts of one iteration around
};

}  // namespace

ir::Stmt loop_partition(const ir::Stmt& s) { return Partitioner().mutate(s); }

}  // namespace kiln::passes
