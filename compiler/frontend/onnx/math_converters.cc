// Converters of ONNX's elementwise math, logic, variadic and reduction operators.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "compiler/frontend/onnx/importer.h"

namespace kiln::frontend {

namespace {

// Op `op` of input 0 with float attributes copied from the node (name, default).
Converter unary_with(const std::string& op, std::vector<std::pair<std::string, double>> attrs) {
  return [op, attrs](Importer& c) {
    Attrs a;
    for (const auto& [name, def] : attrs) a.set(name, c.attr_float(name, def));
    return std::vector<NodeId>{c.op(op, {c.in(0)}, a)};
  };
}

// Max, Min, Sum, Mean: any number of broadcasting operands.
Converter variadic(const std::string& op, bool mean = false) {
  return [op, mean](Importer& c) {
    std::vector<NodeId> in;
    for (int k = 0; k < c.num_inputs(); ++k)
      if (c.has_input(k)) in.push_back(c.in(k));
    if (in.empty()) fail("no operands");
    NodeId y = in[0];
    for (size_t k = 1; k < in.size(); ++k) y = c.op(op, {y, in[k]});
    if (mean && in.size() > 1) y = c.op("divide", {y, c.scalar(c.type(y).dtype, static_cast<double>(in.size()))});
    return std::vector<NodeId>{y};
  };
}

}  // namespace

ReduceAxes reduce_axes(Importer& c) {
  const bool input = c.opset() >= (c.node().op_type() == "ReduceSum" ? 13 : 18);
  if (!input) return {c.attr_ints("axes", {}), false};
  std::vector<int64_t> axes = c.has_input(1) ? c.const_ints(1) : std::vector<int64_t>{};
  return {axes, axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0};
}

namespace {

NodeId reduce(Importer& c, const std::string& kind, NodeId x, const std::vector<int64_t>& axes, int64_t keepdims) {
  return c.op(kind, {x}, {{"axes", axes}, {"keepdims", keepdims}});
}

// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare, ReduceMin.
Converter reduction(const std::string& kind) {
  return [kind](Importer& c) {
    const ReduceAxes r = reduce_axes(c);
    if (r.noop) return std::vector<NodeId>{c.in(0)};
    const std::vector<int64_t>& axes = r.axes;
    int64_t keep = c.attr_int("keepdims", 1);
    NodeId x = c.in(0);
    if (kind == "min") return std::vector<NodeId>{reduce(c, "min", x, axes, keep)};
    if (kind == "l1") return std::vector<NodeId>{reduce(c, "sum", c.op("abs", {x}), axes, keep)};
    if (kind == "sum_square") return std::vector<NodeId>{reduce(c, "sum", c.op("multiply", {x, x}), axes, keep)};
    if (kind == "l2") return std::vector<NodeId>{c.op("sqrt", {reduce(c, "sum", c.op("multiply", {x, x}), axes, keep)})};
    if (kind == "prod") {
      // |prod| = exp(sum(log|x|)); the sign from the parity of the negative factors; 0
      // where a factor is 0 (log gives -inf, exp 0).
      DataType t = c.type(x).dtype;
      if (!t.is_float()) fail("ReduceProd is supported on floating-point data");
      NodeId mag = c.op("exp", {reduce(c, "sum", c.op("log", {c.op("abs", {x})}), axes, keep)});
      NodeId neg = c.op("cast", {c.op("less", {x, c.scalar(t, 0)})}, {{"dtype", dtype_name(t)}});
      NodeId odd = c.op("fmod", {reduce(c, "sum", neg, axes, keep), c.scalar(t, 2)});
      NodeId sign = c.op("subtract", {c.scalar(t, 1), c.op("multiply", {odd, c.scalar(t, 2)})});
      return std::vector<NodeId>{c.op("multiply", {mag, sign})};
    }
    if (kind == "log_sum") return std::vector<NodeId>{c.op("log", {reduce(c, "sum", x, axes, keep)})};
    // log(sum(exp(x - m))) + m with m = max(x): no overflow for large x.
    NodeId m = reduce(c, "max", x, axes, 1);
    NodeId y = c.op("add", {c.op("log", {reduce(c, "sum", c.op("exp", {c.op("subtract", {x, m})}), axes, 1)}), m});
    if (!keep) y = c.reshape(y, c.type(reduce(c, "max", x, axes, 0)).shape);
    return std::vector<NodeId>{y};
  };
}

// The axes a (Log)Softmax normalizes over: before opset 13 every axis from `axis` on
// (the input is read as 2-d), from 13 only `axis`.
std::vector<int64_t> softmax_axes(Importer& c) {
  int n = c.in_type(0).ndim();
  int64_t axis = c.attr_int("axis", c.opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += n;
  if (axis < 0 || axis >= std::max(n, 1)) fail(fmt::format("axis {} out of range for rank {}", c.attr_int("axis", 0), n));
  if (c.opset() >= 13) return {axis};
  std::vector<int64_t> r;
  for (int64_t d = axis; d < n; ++d) r.push_back(d);
  return r;
}

std::vector<NodeId> log_softmax(Importer& c) {
  std::vector<int64_t> axes = softmax_axes(c);
  NodeId x = c.in(0);
  NodeId d = c.op("subtract", {x, reduce(c, "max", x, axes, 1)});
  return {c.op("subtract", {d, c.op("log", {reduce(c, "sum", c.op("exp", {d}), axes, 1)})})};
}

// ArgMax/ArgMin: the first (or last) index along the axis where x equals its extreme.
Converter arg_extreme(const std::string& kind) {
  return [kind](Importer& c) {
    TensorType t = c.in_type(0);  // a copy: adding nodes moves the graph's types
    int n = t.ndim();
    int64_t axis = c.attr_int("axis", 0);
    if (axis < 0) axis += n;
    if (axis < 0 || axis >= n) fail(fmt::format("axis {} out of range for rank {}", c.attr_int("axis", 0), n));
    int64_t keep = c.attr_int("keepdims", 1);
    bool last = c.attr_int("select_last_index", 0) != 0;
    NodeId x = c.in(0);
    NodeId m = reduce(c, kind, x, {axis}, 1);
    NodeId hit = c.op("equal", {x, m});
    // Indices 0..d-1 along the axis, broadcast over the dimensions after it.
    std::vector<int64_t> ishape(static_cast<size_t>(n - axis), 1);
    ishape[0] = t.shape[axis];
    auto iota = std::make_shared<interp::HostBuffer>(DataType::Int(64), ishape);
    for (int64_t i = 0; i < t.shape[axis]; ++i) iota->set_int(i, i);
    NodeId idx = c.constant(iota, "_iota");
    NodeId miss = c.scalar(DataType::Int(64), last ? -1.0 : static_cast<double>(t.shape[axis]));
    NodeId pick = c.op("where", {hit, idx, miss});
    return std::vector<NodeId>{reduce(c, last ? "max" : "min", pick, {axis}, keep)};
  };
}

// Hardmax: 1 at the first maximum along the axis (before opset 13: of the input read as
// 2-d at the axis), 0 elsewhere.
std::vector<NodeId> hardmax(Importer& c) {
  TensorType t = c.in_type(0);
  std::vector<int64_t> axes = softmax_axes(c);
  NodeId x = c.in(0);
  int64_t axis = axes[0];
  if (axes.size() > 1) x = c.reshape(x, {product(t.shape, 0, axis), product(t.shape, axis, t.shape.size())}), axis = 1;
  TensorType xt = c.type(x);
  NodeId m = reduce(c, "max", x, {axis}, 1);
  std::vector<int64_t> ishape(static_cast<size_t>(xt.ndim() - axis), 1);
  ishape[0] = xt.shape[axis];
  auto iota = std::make_shared<interp::HostBuffer>(DataType::Int(64), ishape);
  for (int64_t i = 0; i < xt.shape[axis]; ++i) iota->set_int(i, i);
  NodeId idx = c.constant(iota, "_iota");
  NodeId first = reduce(c, "min", c.op("where", {c.op("equal", {x, m}), idx, c.scalar(DataType::Int(64), static_cast<double>(xt.shape[axis]))}), {axis}, 1);
  NodeId y = c.op("cast", {c.op("equal", {idx, first})}, {{"dtype", dtype_name(t.dtype)}});
  if (c.type(y).shape != xt.shape) y = c.op("broadcast_to", {y}, {{"shape", xt.shape}});
  return {c.reshape(y, t.shape)};
}

std::vector<NodeId> mod(Importer& c) {
  return {c.op(c.attr_int("fmod", 0) ? "fmod" : "mod", {c.in(0), c.in(1)})};
}

std::vector<NodeId> bit_shift(Importer& c) {
  std::string dir = c.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") fail("direction must be LEFT or RIGHT, not '" + dir + "'");
  return {c.op(dir == "LEFT" ? "shift_left" : "shift_right", {c.in(0), c.in(1)})};
}

// The result has the base's type; the exponent may have another. Integer powers are
// computed in float64 (exact for the results an int64 holds up to 2^53).
std::vector<NodeId> pow(Importer& c) {
  NodeId a = c.in(0), b = c.in(1);
  DataType t = c.type(a).dtype;
  if (t.is_float()) {
    if (c.type(b).dtype != t) b = c.op("cast", {b}, {{"dtype", dtype_name(t)}});
    return {c.op("power", {a, b})};
  }
  auto f64 = [&](NodeId x) { return c.type(x).dtype == DataType::Float(64) ? x : c.op("cast", {x}, {{"dtype", std::string("float64")}}); };
  NodeId y = c.op("round", {c.op("power", {f64(a), f64(b)})});
  return {c.op("cast", {y}, {{"dtype", dtype_name(t)}})};
}

// A slope that does not broadcast numpy-style but has one value per channel is per
// channel (PRelu before opset 7, which PyTorch's old exports use).
std::vector<NodeId> prelu(Importer& c) {
  TensorType x = c.in_type(0), s = c.in_type(1);
  NodeId slope = c.in(1);
  bool numpy = s.ndim() <= x.ndim();
  for (int d = 0; numpy && d < s.ndim(); ++d) {
    int64_t sd = s.shape[s.ndim() - 1 - d], xd = x.shape[x.ndim() - 1 - d];
    numpy = sd == xd || sd == 1;
  }
  if (!numpy && s.ndim() == 1 && x.ndim() >= 2 && s.shape[0] == x.shape[1]) {
    std::vector<int64_t> cs(x.shape.size() - 1, 1);
    cs[0] = x.shape[1];
    slope = c.reshape(slope, cs);
  }
  return {c.op("prelu", {c.in(0), slope})};
}

std::vector<NodeId> cast_like(Importer& c) {
  DataType t = c.in_type(1).dtype;
  if (t == c.in_type(0).dtype) return {c.in(0)};
  return {c.op("cast", {c.in(0)}, {{"dtype", dtype_name(t)}})};
}

// NegativeLogLikelihoodLoss of log-probabilities x [N, C, d...] at labels t [N, d...]:
// -x[n, t[n, d], d], weighted by weight[t] and zero where t is ignore_index; then
// reduced ("none", "sum", "mean": the weighted mean).
NodeId nll(Importer& c, NodeId x, NodeId t, int weight_input) {
  TensorType xt = c.type(x), tt = c.type(t);
  if (xt.ndim() < 2 || tt.ndim() != xt.ndim() - 1) fail("input must be [N, C, ...] and target [N, ...]");
  std::string reduction = c.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") fail("unknown reduction '" + reduction + "'");
  std::vector<int64_t> t1 = tt.shape;
  t1.insert(t1.begin() + 1, 1);
  NodeId picked = c.reshape(c.op("gather_elements", {x, c.reshape(t, t1)}, {{"axis", int64_t{1}}}), tt.shape);
  NodeId loss = c.op("negative", {picked});
  NodeId w = -1;  // the weight of each element, when weights or ignore_index are given
  if (c.has_input(weight_input)) {
    w = c.op("take", {c.in(weight_input), t}, {{"axis", int64_t{0}}});
    loss = c.op("multiply", {loss, w});
  }
  if (c.has_attr("ignore_index")) {
    NodeId skip = c.op("equal", {t, c.scalar(tt.dtype, static_cast<double>(c.attr_int("ignore_index", 0)))});
    NodeId zero = c.scalar(xt.dtype, 0);
    loss = c.op("where", {skip, zero, loss});
    w = c.op("where", {skip, zero, w >= 0 ? w : c.scalar(xt.dtype, 1)});
  }
  if (reduction == "none") return loss;
  std::vector<int64_t> all;
  NodeId total = reduce(c, "sum", loss, all, 0);
  if (reduction == "sum") return total;
  if (w < 0) return reduce(c, "mean", loss, all, 0);
  if (c.type(w).shape != tt.shape) w = c.op("broadcast_to", {w}, {{"shape", tt.shape}});
  return c.op("divide", {total, reduce(c, "sum", w, all, 0)});
}

std::vector<NodeId> nll_loss(Importer& c) { return {nll(c, c.in(0), c.in(1), 2)}; }

// SoftmaxCrossEntropyLoss: NegativeLogLikelihoodLoss of LogSoftmax over axis 1; the
// optional second output is the log-probabilities.
std::vector<NodeId> softmax_cross_entropy(Importer& c) {
  NodeId x = c.in(0);
  NodeId d = c.op("subtract", {x, reduce(c, "max", x, {1}, 1)});
  NodeId logp = c.op("subtract", {d, c.op("log", {reduce(c, "sum", c.op("exp", {d}), {1}, 1)})});
  return {nll(c, logp, c.in(1), 2), logp};
}

// Mish (opset 18): x * tanh(softplus(x)).
std::vector<NodeId> mish(Importer& c) {
  NodeId x = c.in(0);
  return {c.op("multiply", {x, c.op("tanh", {c.op("softplus", {x})})})};
}

// Gelu (opset 20): x / 2 * (1 + erf(x / sqrt(2))), the form PyTorch exports as
// separate nodes before it, or with approximate="tanh" x / 2 * (1 + tanh(sqrt(2 / pi)
// * (x + 0.044715 x^3))).
std::vector<NodeId> gelu(Importer& c) {
  NodeId x = c.in(0);
  const DataType t = c.in_type(0).dtype;
  const std::string approximate = c.attr_string("approximate", "none");
  NodeId inner;
  if (approximate == "none") {
    inner = c.op("erf", {c.op("multiply", {x, c.scalar(t, 1 / std::sqrt(2.0))})});
  } else if (approximate == "tanh") {
    NodeId cube = c.op("multiply", {c.op("multiply", {x, x}), x});
    NodeId arg = c.op("add", {x, c.op("multiply", {cube, c.scalar(t, 0.044715)})});
    inner = c.op("tanh", {c.op("multiply", {arg, c.scalar(t, std::sqrt(2 / std::numbers::pi))})});
  } else {
    fail("approximate '" + approximate + "' is not one of none, tanh");
  }
  NodeId half = c.op("multiply", {x, c.scalar(t, 0.5)});
  return {c.op("multiply", {half, c.op("add", {inner, c.scalar(t, 1)})})};
}

}  // namespace

void add_math_converters(std::map<std::string, Converter>& m) {
  m["Mish"] = mish;
  m["Gelu"] = gelu;
  m["Max"] = variadic("maximum");
  m["Min"] = variadic("minimum");
  m["Sum"] = variadic("add");
  m["Mean"] = variadic("add", true);
  for (const auto& [onnx, op] : std::vector<std::pair<std::string, std::string>>{
           {"Log", "log"}, {"Floor", "floor"}, {"Ceil", "ceil"}, {"Round", "round"}, {"Sign", "sign"},
           {"Reciprocal", "reciprocal"}, {"Softplus", "softplus"}, {"Softsign", "softsign"}, {"Not", "logical_not"},
           {"IsNaN", "isnan"}, {"Sin", "sin"}, {"Cos", "cos"}, {"Tan", "tan"}, {"Asin", "asin"}, {"Acos", "acos"},
           {"Atan", "atan"}, {"Sinh", "sinh"}, {"Cosh", "cosh"}, {"Asinh", "asinh"}, {"Acosh", "acosh"}, {"Atanh", "atanh"}})
    m[onnx] = unary(op);
  m["Elu"] = unary_with("elu", {{"alpha", 1.0}});
  m["Celu"] = unary_with("celu", {{"alpha", 1.0}});
  m["Selu"] = unary_with("selu", {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}});
  m["ThresholdedRelu"] = unary_with("thresholded_relu", {{"alpha", 1.0}});
  m["Shrink"] = unary_with("shrink", {{"lambd", 0.5}, {"bias", 0.0}});
  m["IsInf"] = [](Importer& c) {
    Attrs a{{"detect_negative", c.attr_int("detect_negative", 1)}, {"detect_positive", c.attr_int("detect_positive", 1)}};
    return std::vector<NodeId>{c.op("isinf", {c.in(0)}, a)};
  };
  for (const auto& [onnx, op] : std::vector<std::pair<std::string, std::string>>{
           {"Less", "less"}, {"Greater", "greater"}, {"LessOrEqual", "less_equal"}, {"GreaterOrEqual", "greater_equal"},
           {"And", "logical_and"}, {"Or", "logical_or"}, {"Xor", "logical_xor"}})
    m[onnx] = binary(op);
  m["Mod"] = mod;
  m["Pow"] = pow;
  m["PRelu"] = prelu;
  m["BitShift"] = bit_shift;
  m["CastLike"] = cast_like;
  m["LogSoftmax"] = log_softmax;
  m["NegativeLogLikelihoodLoss"] = nll_loss;
  m["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
  m["ArgMax"] = arg_extreme("max");
  m["ArgMin"] = arg_extreme("min");
  m["ReduceMin"] = reduction("min");
  m["ReduceL1"] = reduction("l1");
  m["ReduceProd"] = reduction("prod");
  m["Hardmax"] = hardmax;
  m["ReduceL2"] = reduction("l2");
  m["ReduceLogSum"] = reduction("log_sum");
  m["ReduceLogSumExp"] = reduction("log_sum_exp");
  m["ReduceSumSquare"] = reduction("sum_square");
}

}  // namespace kiln::frontend
