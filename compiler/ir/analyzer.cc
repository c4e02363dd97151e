#include "compiler/ir/analyzer.h"

#include <algorithm>

#include "compiler/ir/functor.h"
#include "support/integer.h"

namespace kiln::ir {
namespace {

using I128 = __int128;

int64_t sat(I128 v) {
  if (v <= static_cast<I128>(ConstBound::kNegInf)) return ConstBound::kNegInf;
  if (v >= static_cast<I128>(ConstBound::kPosInf)) return ConstBound::kPosInf;
  return static_cast<int64_t>(v);
}
bool inf(int64_t v) { return v == ConstBound::kNegInf || v == ConstBound::kPosInf; }

int64_t add(int64_t a, int64_t b) {
  if (inf(a)) return a;
  if (inf(b)) return b;
  return sat(static_cast<I128>(a) + b);
}
int64_t neg(int64_t a) {
  if (a == ConstBound::kNegInf) return ConstBound::kPosInf;
  if (a == ConstBound::kPosInf) return ConstBound::kNegInf;
  return -a;
}
int64_t mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (inf(a) || inf(b)) return ((a < 0) != (b < 0)) ? ConstBound::kNegInf : ConstBound::kPosInf;
  return sat(static_cast<I128>(a) * b);
}
int64_t floordiv(int64_t a, int64_t c) { return inf(a) ? a : kiln::floordiv(a, c); }  // c > 0

ConstBound type_bound(DataType t) {
  if (!t.is_integer()) return {};
  if (t.is_uint() && t.bits() == 64) return {0, ConstBound::kPosInf};
  return {t.min_int(), t.max_int()};
}

ConstBound intersect(ConstBound a, ConstBound b) { return {std::max(a.min, b.min), std::min(a.max, b.max)}; }

class BoundEval {
 public:
  explicit BoundEval(const std::unordered_map<const VarNode*, ConstBound>& vars) : vars_(vars) {}

  ConstBound eval(const Expr& e) {
    ConstBound b = eval_(e);
    return intersect(b, type_bound(e.dtype()));
  }

 private:
  ConstBound eval_(const Expr& e) {
    switch (e.kind()) {
      case NodeKind::IntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        return {v, v};
      }
      case NodeKind::Var: {
        auto it = vars_.find(e.as<VarNode>());
        if (it != vars_.end()) return it->second;
        auto jt = lets_.find(e.as<VarNode>());
        return jt != lets_.end() ? jt->second : ConstBound{};
      }
      case NodeKind::Add: {
        auto* p = e.as<AddNode>();
        ConstBound a = eval(p->a), b = eval(p->b);
        return {add(a.min, b.min), add(a.max, b.max)};
      }
      case NodeKind::Sub: {
        auto* p = e.as<SubNode>();
        ConstBound a = eval(p->a), b = eval(p->b);
        return {add(a.min, neg(b.max)), add(a.max, neg(b.min))};
      }
      case NodeKind::Mul: {
        auto* p = e.as<MulNode>();
        ConstBound a = eval(p->a), b = eval(p->b);
        int64_t c[4] = {mul(a.min, b.min), mul(a.min, b.max), mul(a.max, b.min), mul(a.max, b.max)};
        return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
      }
      case NodeKind::Div: {
        auto* p = e.as<DivNode>();
        ConstBound a = eval(p->a), b = eval(p->b);
        if (b.is_const() && b.min > 0) return {floordiv(a.min, b.min), floordiv(a.max, b.min)};
        if (b.min > 0 && a.min >= 0) return {0, a.max};
        return {};
      }
      case NodeKind::Mod: {
        auto* p = e.as<ModNode>();
        ConstBound a = eval(p->a), b = eval(p->b);
        if (b.min > 0) {
          if (a.min >= 0 && a.max < b.min) return a;
          return {0, b.max == ConstBound::kPosInf ? b.max : b.max - 1};
        }
        return {};
      }
      case NodeKind::Min: {
        auto* p = e.as<MinNode>();
        ConstBound a = eval(p->a), b = eval(p->b);
        return {std::min(a.min, b.min), std::min(a.max, b.max)};
      }
      case NodeKind::Max: {
        auto* p = e.as<MaxNode>();
        ConstBound a = eval(p->a), b = eval(p->b);
        return {std::max(a.min, b.min), std::max(a.max, b.max)};
      }
      case NodeKind::Select: {
        auto* p = e.as<SelectNode>();
        ConstBound a = eval(p->true_value), b = eval(p->false_value);
        return {std::min(a.min, b.min), std::max(a.max, b.max)};
      }
      case NodeKind::Cast: {
        auto* p = e.as<CastNode>();
        if (!p->value.dtype().is_integer()) return {};
        ConstBound a = eval(p->value), t = type_bound(e.dtype());
        if (a.min >= t.min && a.max <= t.max) return a;
        return t;
      }
      case NodeKind::Let: {
        auto* p = e.as<LetNode>();
        lets_[p->var.get()] = eval(p->value);
        return eval(p->body);
      }
      case NodeKind::Broadcast: return eval(e.as<BroadcastNode>()->value);
      case NodeKind::Ramp: {
        auto* p = e.as<RampNode>();
        ConstBound b = eval(p->base), s = eval(p->stride);
        ConstBound last{add(b.min, mul(s.min, p->lanes - 1)), add(b.max, mul(s.max, p->lanes - 1))};
        return {std::min(b.min, last.min), std::max(b.max, last.max)};
      }
      case NodeKind::Call: {
        auto* p = e.as<CallNode>();
        if (p->name == "likely") return eval(p->args[0]);
        return {};
      }
      default:
        if (e.dtype().is_bool()) return {0, 1};
        return {};
    }
  }

  const std::unordered_map<const VarNode*, ConstBound>& vars_;
  std::unordered_map<const VarNode*, ConstBound> lets_;
};

}  // namespace

void Analyzer::bind(const Var& v, const Range& range) {
  ConstBound mn = const_bound(range.min);
  ConstBound ext = const_bound(range.extent);
  ConstBound b{mn.min, add(add(mn.max, ext.max), -1)};
  if (ext.max <= 0) b.max = mn.max;
  bind(v, b);
}

void Analyzer::bind(const Var& v, int64_t min, int64_t max) { bind(v, ConstBound{min, max}); }
void Analyzer::bind(const Var& v, ConstBound b) { bounds_[v.get()] = b; }
void Analyzer::unbind(const Var& v) { bounds_.erase(v.get()); }

ConstBound Analyzer::const_bound(const Expr& e) {
  if (!e.dtype().is_integer()) return {};
  return BoundEval(bounds_).eval(e);
}

bool Analyzer::can_prove(const Expr& cond) {
  Expr s = simplify(cond);
  if (const int64_t* v = as_const_int(s)) return *v != 0;
  return false;
}

bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  if (a.dtype() != b.dtype()) return false;
  Expr d = simplify(make_binary(NodeKind::Sub, a, b));
  return is_const_int(d, 0);
}

}  // namespace kiln::ir
