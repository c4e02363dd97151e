#include "compiler/ir/int_set.h"

#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"

namespace kiln::ir {
namespace {

class SetEval {
 public:
  SetEval(const IntSetMap& dom, Analyzer* an) : dom_(dom), an_(an) {}

  IntSet eval(const Expr& e) {
    if (!uses_var(e, [this](const VarNode* v) { return dom_.count(v) != 0; })) return IntSet::point(e);
    switch (e.kind()) {
      case NodeKind::Var: return dom_.at(e.as<VarNode>());
      case NodeKind::Add: {
        auto* p = e.as<AddNode>();
        IntSet a = eval(p->a), b = eval(p->b);
        return {both(a.min, b.min, [](Expr x, Expr y) { return x + y; }), both(a.max, b.max, [](Expr x, Expr y) { return x + y; })};
      }
      case NodeKind::Sub: {
        auto* p = e.as<SubNode>();
        IntSet a = eval(p->a), b = eval(p->b);
        return {both(a.min, b.max, [](Expr x, Expr y) { return x - y; }), both(a.max, b.min, [](Expr x, Expr y) { return x - y; })};
      }
      case NodeKind::Mul: {
        auto* p = e.as<MulNode>();
        IntSet a = eval(p->a), b = eval(p->b);
        if (is_point(b)) return scale(a, b.min);
        if (is_point(a)) return scale(b, a.min);
        return corners(a, b);
      }
      case NodeKind::Div: {
        auto* p = e.as<DivNode>();
        IntSet a = eval(p->a), b = eval(p->b);
        const int64_t* c = is_point(b) ? as_const_int(b.min) : nullptr;
        if (!c || *c <= 0) return IntSet::everything();
        return {a.min.defined() ? a.min / b.min : Expr(), a.max.defined() ? a.max / b.min : Expr()};
      }
      case NodeKind::Mod: {
        auto* p = e.as<ModNode>();
        IntSet a = eval(p->a), b = eval(p->b);
        const int64_t* c = is_point(b) ? as_const_int(b.min) : nullptr;
        if (!c || *c <= 0) return IntSet::everything();
        if (a.bounded()) {  // within one period the modulo is monotone
          Expr qlo = an_->simplify(a.min / b.min), qhi = an_->simplify(a.max / b.min);
          if (an_->can_prove_equal(qlo, qhi)) return {an_->simplify(a.min % b.min), an_->simplify(a.max % b.min)};
        }
        return {make_int(0, e.dtype()), make_int(*c - 1, e.dtype())};
      }
      case NodeKind::Min: {
        auto* p = e.as<MinNode>();
        IntSet a = eval(p->a), b = eval(p->b);
        return {both(a.min, b.min, [](Expr x, Expr y) { return min(x, y); }),
                a.max.defined() && b.max.defined() ? min(a.max, b.max) : (a.max.defined() ? a.max : b.max)};
      }
      case NodeKind::Max: {
        auto* p = e.as<MaxNode>();
        IntSet a = eval(p->a), b = eval(p->b);
        return {a.min.defined() && b.min.defined() ? max(a.min, b.min) : (a.min.defined() ? a.min : b.min),
                both(a.max, b.max, [](Expr x, Expr y) { return max(x, y); })};
      }
      case NodeKind::Select: {
        auto* p = e.as<SelectNode>();
        return union_int_set(eval(p->true_value), eval(p->false_value), an_);
      }
      case NodeKind::Cast: {
        auto* p = e.as<CastNode>();
        if (!p->value.dtype().is_integer() || !e.dtype().is_integer()) return IntSet::everything();
        IntSet a = eval(p->value);
        if (!a.bounded()) return IntSet::everything();
        return {cast(e.dtype(), a.min), cast(e.dtype(), a.max)};
      }
      case NodeKind::Call: {
        auto* p = e.as<CallNode>();
        if (p->name == "likely") return eval(p->args[0]);
        return IntSet::everything();
      }
      default: return IntSet::everything();
    }
  }

 private:
  static bool is_point(const IntSet& s) { return s.bounded() && s.min.same_as(s.max); }

  template <typename F>
  static Expr both(const Expr& a, const Expr& b, F f) {
    return a.defined() && b.defined() ? f(a, b) : Expr();
  }

  IntSet scale(const IntSet& a, const Expr& k) {
    if (is_point(a)) return IntSet::point(a.min * k);
    ConstBound kb = an_->const_bound(k);
    if (kb.min >= 0) return {a.min.defined() ? a.min * k : Expr(), a.max.defined() ? a.max * k : Expr()};
    if (kb.max <= 0) return {a.max.defined() ? a.max * k : Expr(), a.min.defined() ? a.min * k : Expr()};
    return IntSet::everything();
  }

  IntSet corners(const IntSet& a, const IntSet& b) {
    if (!a.bounded() || !b.bounded()) return IntSet::everything();
    Expr c[4] = {a.min * b.min, a.min * b.max, a.max * b.min, a.max * b.max};
    Expr lo = min(min(c[0], c[1]), min(c[2], c[3]));
    Expr hi = max(max(c[0], c[1]), max(c[2], c[3]));
    return {lo, hi};
  }

  const IntSetMap& dom_;
  Analyzer* an_;
};

}  // namespace

IntSet IntSet::from_range(const Range& r) { return {r.min, r.min + r.extent - 1}; }

IntSet eval_int_set(const Expr& e, const IntSetMap& dom, Analyzer* analyzer) {
  IntSet s = SetEval(dom, analyzer).eval(e);
  if (s.min.defined()) s.min = analyzer->simplify(s.min);
  if (s.max.defined()) s.max = analyzer->simplify(s.max);
  return s;
}

IntSet union_int_set(const IntSet& a, const IntSet& b, Analyzer* analyzer) {
  IntSet u;
  if (a.min.defined() && b.min.defined()) u.min = analyzer->simplify(min(a.min, b.min));
  if (a.max.defined() && b.max.defined()) u.max = analyzer->simplify(max(a.max, b.max));
  return u;
}

}  // namespace kiln::ir
