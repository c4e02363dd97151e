#include "compiler/ir/op.h"

#include <cmath>

#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::ir {
namespace {

bool is_literal(const Expr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

Expr convert_literal(const Expr& e, DataType t) {
  if (const auto* i = e.as<IntImmNode>()) return make_const(t, static_cast<double>(i->value));
  return make_const(t, e.as<FloatImmNode>()->value);
}

// Folds two constants; returns undefined when not both constant.
Expr fold(NodeKind k, const Expr& a, const Expr& b) {
  const auto* ia = a.as<IntImmNode>();
  const auto* ib = b.as<IntImmNode>();
  DataType t = a.dtype();
  if (ia && ib) {
    int64_t x = ia->value, y = ib->value;
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (k) {
      case NodeKind::Add: return make_int(static_cast<int64_t>(ux + uy), t);
      case NodeKind::Sub: return make_int(static_cast<int64_t>(ux - uy), t);
      case NodeKind::Mul: return make_int(static_cast<int64_t>(ux * uy), t);
      case NodeKind::Div:
        if (y == 0 || t.is_uint()) return Expr();
        return make_int(x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0), t);
      case NodeKind::Mod:
        if (y == 0 || t.is_uint()) return Expr();
        return make_int(((x % y) + y) % y, t);
      case NodeKind::Min: return t.is_uint() ? make_int(static_cast<int64_t>(std::min(ux, uy)), t) : make_int(std::min(x, y), t);
      case NodeKind::Max: return t.is_uint() ? make_int(static_cast<int64_t>(std::max(ux, uy)), t) : make_int(std::max(x, y), t);
      default: break;
    }
    if (t.is_uint()) {
      switch (k) {
        case NodeKind::EQ: return make_bool(ux == uy);
        case NodeKind::NE: return make_bool(ux != uy);
        case NodeKind::LT: return make_bool(ux < uy);
        case NodeKind::LE: return make_bool(ux <= uy);
        case NodeKind::GT: return make_bool(ux > uy);
        case NodeKind::GE: return make_bool(ux >= uy);
        case NodeKind::And: return make_bool(x && y);
        case NodeKind::Or: return make_bool(x || y);
        default: return Expr();
      }
    }
    switch (k) {
      case NodeKind::EQ: return make_bool(x == y);
      case NodeKind::NE: return make_bool(x != y);
      case NodeKind::LT: return make_bool(x < y);
      case NodeKind::LE: return make_bool(x <= y);
      case NodeKind::GT: return make_bool(x > y);
      case NodeKind::GE: return make_bool(x >= y);
      default: return Expr();
    }
  }
  const auto* fa = a.as<FloatImmNode>();
  const auto* fb = b.as<FloatImmNode>();
  if (fa && fb) {
    double x = fa->value, y = fb->value;
    switch (k) {
      case NodeKind::Add: return make_float(x + y, t);
      case NodeKind::Sub: return make_float(x - y, t);
      case NodeKind::Mul: return make_float(x * y, t);
      case NodeKind::Div: return make_float(x / y, t);
      case NodeKind::Min: return make_float(std::fmin(x, y), t);
      case NodeKind::Max: return make_float(std::fmax(x, y), t);
      case NodeKind::EQ: return make_bool(x == y);
      case NodeKind::NE: return make_bool(x != y);
      case NodeKind::LT: return make_bool(x < y);
      case NodeKind::LE: return make_bool(x <= y);
      case NodeKind::GT: return make_bool(x > y);
      case NodeKind::GE: return make_bool(x >= y);
      default: return Expr();
    }
  }
  return Expr();
}

Expr binary(NodeKind k, Expr a, Expr b) {
  promote(&a, &b);
  if (Expr f = fold(k, a, b); f.defined()) return f;
  return make_binary(k, std::move(a), std::move(b));
}

Expr unary_call(const char* name, Expr x) {
  DataType t = x.dtype();
  return make_call(t, name, {std::move(x)});
}

}  // namespace

void promote(Expr* a, Expr* b) {
  DataType ta = a->dtype(), tb = b->dtype();
  if (ta.lanes() != tb.lanes()) {
    if (ta.is_scalar()) {
      *a = make_broadcast(*a, tb.lanes());
    } else if (tb.is_scalar()) {
      *b = make_broadcast(*b, ta.lanes());
    } else {
      throw CompileError("operands with " + std::to_string(ta.lanes()) + " and " + std::to_string(tb.lanes()) + " lanes");
    }
    ta = a->dtype();
    tb = b->dtype();
  }
  if (ta == tb) return;
  if (ta.is_scalar() && is_literal(*a)) {
    *a = convert_literal(*a, tb);
    return;
  }
  if (tb.is_scalar() && is_literal(*b)) {
    *b = convert_literal(*b, ta);
    return;
  }
  if (ta.is_float() && !tb.is_float()) {
    *b = make_cast(ta, *b);
  } else if (tb.is_float() && !ta.is_float()) {
    *a = make_cast(tb, *a);
  } else if (ta.code() == tb.code()) {
    if (ta.bits() < tb.bits()) {
      *a = make_cast(tb, *a);
    } else {
      *b = make_cast(ta, *b);
    }
  } else {
    throw CompileError("cannot mix " + ta.to_string() + " (" + to_string(*a) + ") and " + tb.to_string() + " (" +
                       to_string(*b) + "); cast one of them");
  }
}

Expr operator+(Expr a, Expr b) { return binary(NodeKind::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(NodeKind::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(NodeKind::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(NodeKind::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return binary(NodeKind::Mod, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return make_const(a.dtype(), 0) - a; }
Expr operator<(Expr a, Expr b) { return binary(NodeKind::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return binary(NodeKind::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return binary(NodeKind::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return binary(NodeKind::GE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return binary(NodeKind::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return binary(NodeKind::Or, std::move(a), std::move(b)); }
Expr operator!(Expr a) {
  if (const auto* i = a.as<IntImmNode>()) return make_bool(i->value == 0);
  return make_not(std::move(a));
}
Expr eq(Expr a, Expr b) { return binary(NodeKind::EQ, std::move(a), std::move(b)); }
Expr ne(Expr a, Expr b) { return binary(NodeKind::NE, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return binary(NodeKind::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(NodeKind::Max, std::move(a), std::move(b)); }

Expr select(Expr cond, Expr t, Expr f) {
  promote(&t, &f);
  if (const auto* c = cond.as<IntImmNode>()) return c->value ? t : f;
  return make_select(std::move(cond), std::move(t), std::move(f));
}

Expr cast(DataType t, Expr v) {
  if (t.is_scalar() && v.dtype().is_vector()) t = t.with_lanes(v.dtype().lanes());
  if (v.dtype() == t) return v;
  if (is_literal(v) && t.is_scalar()) return convert_literal(v, t);
  return make_cast(t, std::move(v));
}

Expr ceil_div(Expr a, Expr b) { return (a + b - 1) / b; }

Expr likely(Expr cond) {
  DataType t = DataType::Bool(cond.dtype().lanes());
  return make_call(t, "likely", {std::move(cond)});
}
Expr abs(Expr x) { return unary_call("abs", std::move(x)); }
Expr exp(Expr x) { return unary_call("exp", std::move(x)); }
Expr log(Expr x) { return unary_call("log", std::move(x)); }
Expr sqrt(Expr x) { return unary_call("sqrt", std::move(x)); }
Expr tanh(Expr x) { return unary_call("tanh", std::move(x)); }
Expr sigmoid(Expr x) { return unary_call("sigmoid", std::move(x)); }
Expr sin(Expr x) { return unary_call("sin", std::move(x)); }
Expr cos(Expr x) { return unary_call("cos", std::move(x)); }
Expr tan(Expr x) { return unary_call("tan", std::move(x)); }
Expr asin(Expr x) { return unary_call("asin", std::move(x)); }
Expr acos(Expr x) { return unary_call("acos", std::move(x)); }
Expr atan(Expr x) { return unary_call("atan", std::move(x)); }
Expr sinh(Expr x) { return unary_call("sinh", std::move(x)); }
Expr cosh(Expr x) { return unary_call("cosh", std::move(x)); }
Expr asinh(Expr x) { return unary_call("asinh", std::move(x)); }
Expr acosh(Expr x) { return unary_call("acosh", std::move(x)); }
Expr atanh(Expr x) { return unary_call("atanh", std::move(x)); }
Expr floor(Expr x) { return unary_call("floor", std::move(x)); }
Expr ceil(Expr x) { return unary_call("ceil", std::move(x)); }
Expr round(Expr x) { return unary_call("round", std::move(x)); }
Expr pow(Expr x, Expr y) {
  promote(&x, &y);
  DataType t = x.dtype();
  return make_call(t, "pow", {std::move(x), std::move(y)});
}

namespace {
Expr bit_call(const char* name, Expr x, Expr y) {
  promote(&x, &y);
  if (!x.dtype().is_integer()) throw CompileError(std::string(name) + " of non-integer type " + x.dtype().to_string());
  DataType t = x.dtype();
  return make_call(t, name, {std::move(x), std::move(y)});
}
}  // namespace

Expr shift_left(Expr x, Expr y) { return bit_call("shift_left", std::move(x), std::move(y)); }
Expr shift_right(Expr x, Expr y) { return bit_call("shift_right", std::move(x), std::move(y)); }
Expr bitwise_and(Expr x, Expr y) { return bit_call("bitwise_and", std::move(x), std::move(y)); }
Expr bitwise_or(Expr x, Expr y) { return bit_call("bitwise_or", std::move(x), std::move(y)); }
Expr bitwise_xor(Expr x, Expr y) { return bit_call("bitwise_xor", std::move(x), std::move(y)); }

}  // namespace kiln::ir
