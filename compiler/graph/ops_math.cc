// Elementwise math beyond ops.cc: rounding, logarithms, activations, comparisons,
// logic and integer arithmetic.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | log floor ceil round sign reciprocal softplus softsign logical_not isnan | x | - | elemwise |
// | sin cos tan asin acos atan sinh cosh asinh acosh atanh | x | - | elemwise |
// | elu celu thresholded_relu | x | alpha | elemwise |
// | selu | x | alpha, gamma | elemwise |
// | shrink | x | lambd, bias | elemwise |
// | isinf | x | detect_negative, detect_positive | elemwise |
// | less greater less_equal greater_equal logical_and logical_or logical_xor | a, b | - | broadcast (bool) |
// | mod (floor modulo, Python's %) fmod (truncated, C's fmod) prelu shift_left shift_right | a, b | - | broadcast |
#include <limits>

#include "compiler/graph/op_util.h"
#include "compiler/ir/op.h"

namespace kiln::graph::detail {

using ir::Expr;

namespace {

Expr c(const Expr& like, double v) { return ir::make_const(like.dtype(), v); }

// Truncation toward zero of a float.
Expr trunc(const Expr& v) { return ir::select(v < c(v, 0), ir::ceil(v), ir::floor(v)); }

// An elementwise test: a bool tensor of the input's shape.
void reg_predicate(const std::string& name, std::function<Expr(Expr, const Attrs&)> f) {
  reg({name, OpPattern::ElemWise, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs&) { return TensorType{DataType::Bool(), in[0].shape}; },
       [f, name](const std::vector<te::Tensor>& in, const Attrs& a, const TensorType&) {
         return te::compute(in[0]->shape, [&](const std::vector<ir::Var>& i) { return f(in[0](as_exprs(i)), a); }, name,
                            "elemwise");
       }});
}

void register_unary() {
  reg_unary_op("log", [](Expr x, const Attrs&) { return ir::log(x); });
  for (const auto& [name, f] : std::vector<std::pair<std::string, Expr (*)(Expr)>>{
           {"sin", ir::sin}, {"cos", ir::cos}, {"tan", ir::tan}, {"asin", ir::asin}, {"acos", ir::acos},
           {"atan", ir::atan}, {"sinh", ir::sinh}, {"cosh", ir::cosh}, {"asinh", ir::asinh}, {"acosh", ir::acosh},
           {"atanh", ir::atanh}})
    reg_unary_op(name, [f](Expr x, const Attrs&) { return f(x); });
  reg_unary_op("floor", [](Expr x, const Attrs&) { return x.dtype().is_float() ? ir::floor(x) : x; });
  reg_unary_op("ceil", [](Expr x, const Attrs&) { return x.dtype().is_float() ? ir::ceil(x) : x; });
  reg_unary_op("round", [](Expr x, const Attrs&) { return x.dtype().is_float() ? ir::round(x) : x; });  // half to even
  reg_unary_op("sign", [](Expr x, const Attrs&) {
    return ir::select(x > c(x, 0), c(x, 1), ir::select(x < c(x, 0), c(x, -1), c(x, 0)));
  });
  reg_unary_op("reciprocal", [](Expr x, const Attrs&) { return c(x, 1) / x; });
  // log(1 + e^x), written so that large x does not overflow.
  reg_unary_op("softplus", [](Expr x, const Attrs&) {
    return ir::max(x, c(x, 0)) + ir::log(c(x, 1) + ir::exp(-ir::abs(x)));
  });
  reg_unary_op("softsign", [](Expr x, const Attrs&) { return x / (c(x, 1) + ir::abs(x)); });
  reg_unary_op("logical_not", [](Expr x, const Attrs&) { return !x; });
  reg_predicate("isnan", [](Expr x, const Attrs&) { return ir::ne(x, x); });
  reg_predicate("isinf", [](Expr x, const Attrs& a) {
    Expr inf = c(x, std::numeric_limits<double>::infinity());
    Expr pos = a.get_int("detect_positive", 1) ? ir::eq(x, inf) : Expr(ir::make_const(DataType::Bool(), 0));
    Expr neg = a.get_int("detect_negative", 1) ? ir::eq(x, -inf) : Expr(ir::make_const(DataType::Bool(), 0));
    return pos || neg;
  });
  reg_unary_op("elu", [](Expr x, const Attrs& a) {
    return ir::select(x < c(x, 0), c(x, a.get_float("alpha", 1.0)) * (ir::exp(x) - c(x, 1)), x);
  });
  reg_unary_op("celu", [](Expr x, const Attrs& a) {
    double alpha = a.get_float("alpha", 1.0);
    return ir::max(x, c(x, 0)) + ir::min(c(x, 0), c(x, alpha) * (ir::exp(x / c(x, alpha)) - c(x, 1)));
  });
  reg_unary_op("selu", [](Expr x, const Attrs& a) {
    Expr alpha = c(x, a.get_float("alpha", 1.67326319217681884765625));
    Expr gamma = c(x, a.get_float("gamma", 1.05070102214813232421875));
    return gamma * ir::select(x > c(x, 0), x, alpha * ir::exp(x) - alpha);
  });
  reg_unary_op("thresholded_relu", [](Expr x, const Attrs& a) {
    return ir::select(x > c(x, a.get_float("alpha", 1.0)), x, c(x, 0));
  });
  reg_unary_op("shrink", [](Expr x, const Attrs& a) {
    Expr l = c(x, a.get_float("lambd", 0.5)), b = c(x, a.get_float("bias", 0.0));
    return ir::select(x < -l, x + b, ir::select(x > l, x - b, c(x, 0)));
  });
}

void register_binary() {
  reg_binary_op("less", [](Expr a, Expr b) { return a < b; }, true);
  reg_binary_op("greater", [](Expr a, Expr b) { return a > b; }, true);
  reg_binary_op("less_equal", [](Expr a, Expr b) { return a <= b; }, true);
  reg_binary_op("greater_equal", [](Expr a, Expr b) { return a >= b; }, true);
  reg_binary_op("logical_and", [](Expr a, Expr b) { return a && b; }, true);
  reg_binary_op("logical_or", [](Expr a, Expr b) { return a || b; }, true);
  reg_binary_op("logical_xor", [](Expr a, Expr b) { return ir::ne(a, b); }, true);
  // The result takes the divisor's sign (integers only in ONNX).
  reg_binary_op("mod", [](Expr a, Expr b) { return a % b; }, false);
  // The result takes the dividend's sign.
  reg_binary_op("fmod", [](Expr a, Expr b) {
    if (a.dtype().is_float()) return a - trunc(a / b) * b;
    Expr r = a % b;  // floor modulo: has b's sign
    return ir::select(ir::ne(r, c(r, 0)) && ir::ne(a < c(a, 0), b < c(b, 0)), r - b, r);
  }, false);
  reg_binary_op("prelu", [](Expr x, Expr slope) { return ir::select(x < c(x, 0), x * slope, x); }, false);
  reg_binary_op("shift_left", [](Expr a, Expr b) { return ir::shift_left(a, b); }, false);
  reg_binary_op("shift_right", [](Expr a, Expr b) { return ir::shift_right(a, b); }, false);
}

}  // namespace

void register_math_ops() {
  register_unary();
  register_binary();
}

}  // namespace kiln::graph::detail
