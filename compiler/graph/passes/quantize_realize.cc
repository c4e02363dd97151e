// QuantizeRealize: a QDQ graph (quantize_linear / dequantize_linear around float
// operators, as ONNX's QDQ format and `kiln quantize` write it) becomes integer
// arithmetic.
//
// Every conv2d / dense / matmul that reads dequantize_linear(int8 data) and
// dequantize_linear(int8 constant weight) computes in integers: the weight stays
// int8, zero points are subtracted in int32 where they are not zero, the product
// accumulates in int32 (out_dtype) and is dequantized by s_x * s_w (per tensor or per
// output channel). The float operators after it then run as before.
//
// Where a quantize_linear follows such a product (with a constant bias and a ReLU on
// the way) and every scale is a power of two with zero points 0, the requantization
// is done with a shift instead (the form the accelerator runs, docs/models.md):
//   acc = conv2d(x, w) {out_dtype="int32"}; acc = add(acc, bias + 2^(k-1));
//   acc = right_shift(acc, k); acc = clip(acc) {min=-128 or 0, max=127}; y = cast(acc) {int8}
// with s_x * s_w / s_y = 2^-k. A residual add of two such int8 tensors becomes shifts
// to a common scale, an int32 add and a rounding shift to the output's scale. A
// max_pool2d or reshape between a dequantize and a quantize of the same parameters
// runs on the int8 data itself.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "compiler/graph/lower_group.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/support/error.h"

namespace kiln::graph {

namespace {

const DataType kI32 = DataType::Int(32);

// Constant parameters of a quantize_linear / dequantize_linear node.
struct QParams {
  std::vector<double> scale;
  std::vector<int64_t> zero;
  DataType qtype;  // the integer side's type
  int axis = -1;   // -1: per tensor
  bool per_tensor() const { return scale.size() == 1; }
  bool symmetric() const {
    for (int64_t z : zero)
      if (z != 0) return false;
    return true;
  }
};

std::optional<QParams> qparams(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.op != "quantize_linear" && n.op != "dequantize_linear") return std::nullopt;
  const Node& s = g.node(n.inputs[1]);
  if (!s.is_constant()) return std::nullopt;
  QParams p;
  p.scale = constant_values(s);
  p.qtype = n.op == "quantize_linear" ? n.type.dtype : g.type(n.inputs[0]).dtype;
  if (n.inputs.size() > 2) {
    if (!g.node(n.inputs[2]).is_constant()) return std::nullopt;
    p.zero = constant_ints(g.node(n.inputs[2]));
  } else {
    p.zero.assign(p.scale.size(), 0);
  }
  if (!p.per_tensor()) {
    int64_t axis = n.attrs.get_int("axis", 1);
    p.axis = static_cast<int>(axis < 0 ? axis + n.type.ndim() : axis);
  }
  return p;
}

bool is_int8(DataType t) { return t == DataType::Int(8) || t == DataType::UInt(8); }

// e with v == 2^e exactly.
std::optional<int> pow2_exponent(double v) {
  int e = 0;
  double m = std::frexp(v, &e);
  if (v <= 0 || m != 0.5) return std::nullopt;
  return e - 1;
}

// Evaluates one operator on constant buffers (at compile time).
ConstData evaluate(const std::string& op, const std::vector<ConstData>& in, const Attrs& attrs) {
  Graph scratch;
  std::vector<NodeId> ids;
  for (size_t k = 0; k < in.size(); ++k) ids.push_back(scratch.add_constant(fmt::format("c{}", k), in[k]));
  return evaluate_op(scratch, scratch.add_op(op, ids, attrs));
}

// The value of a subgraph whose leaves are all constants, or nothing.
std::optional<ConstData> constant_value(const Graph& g, NodeId id, int depth = 0) {
  const Node& n = g.node(id);
  if (n.is_constant()) return n.value;
  if (n.is_input() || depth > 8) return std::nullopt;
  std::vector<ConstData> in;
  for (NodeId i : n.inputs) {
    auto v = constant_value(g, i, depth + 1);
    if (!v) return std::nullopt;
    in.push_back(*v);
  }
  return evaluate(n.op, in, n.attrs);
}

ConstData int_buffer(DataType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  auto b = std::make_shared<interp::HostBuffer>(t, std::move(shape));
  for (int64_t i = 0; i < b->size(); ++i) b->set_int(i, v[static_cast<size_t>(i)]);
  return b;
}

ConstData float_buffer(std::vector<int64_t> shape, const std::vector<double>& v) {
  auto b = std::make_shared<interp::HostBuffer>(DataType::Float(32), std::move(shape));
  for (int64_t i = 0; i < b->size(); ++i) b->set(i, v[static_cast<size_t>(i)]);
  return b;
}

// A quantized product found in the old graph: op(dequantize(x), dequantize(w)).
struct Product {
  NodeId node = -1;
  std::string op;    // conv2d or dense (a 2-d matmul with a constant weight becomes dense)
  NodeId x = -1;     // the old int8 data node
  QParams xp, wp;    // wp.axis is the weight's output-channel axis (0) when per channel
  ConstData weight;  // int8/uint8, OIHW or [M, K]
  Attrs attrs;       // the op's attributes (without out_dtype)
  int out_axis = 1;  // the channel axis of the result
};

std::optional<Product> match_product(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if ((n.op != "conv2d" && n.op != "dense" && n.op != "matmul") || n.attrs.has("out_dtype")) return std::nullopt;
  auto xp = qparams(g, n.inputs[0]);
  if (!xp || g.node(n.inputs[0]).op != "dequantize_linear" || !is_int8(xp->qtype) || !xp->per_tensor()) return std::nullopt;
  NodeId w = n.inputs[1];
  bool transposed = false;
  if (g.node(w).op == "transpose" && g.node(w).attrs.get_ints("perm") == std::vector<int64_t>{1, 0}) {
    transposed = true;
    w = g.node(w).inputs[0];
  }
  auto wp = qparams(g, w);
  if (!wp || g.node(w).op != "dequantize_linear" || !is_int8(wp->qtype) || !g.node(g.node(w).inputs[0]).is_constant())
    return std::nullopt;
  Product p{id, n.op, g.node(n.inputs[0]).inputs[0], *xp, *wp, g.node(g.node(w).inputs[0]).value, {}, 1};
  for (const auto& [k, v] : n.attrs.map()) p.attrs.set(k, v);
  if (n.op == "conv2d") {
    if (transposed || (!wp->per_tensor() && wp->axis != 0)) return std::nullopt;
    return p;
  }
  // Dense layout [M, K]: dense(x, w) reads w as is, matmul(x, w) and a transposed
  // weight read it transposed.
  bool flip = (n.op == "matmul") != transposed;
  if (n.op == "matmul" && (n.type.ndim() != 2 || g.type(n.inputs[0]).ndim() != 2)) return std::nullopt;
  if (flip) {
    p.weight = evaluate("transpose", {p.weight}, {{"perm", std::vector<int64_t>{1, 0}}});
    if (!wp->per_tensor()) p.wp.axis = 1 - wp->axis;
  }
  if (!wp->per_tensor() && p.wp.axis != 0) return std::nullopt;
  p.op = "dense";
  p.attrs = {};
  return p;
}

class Realizer {
 public:
  explicit Realizer(const Graph& old) : old_(old), rw_(old) {}

  Graph run() {
    for (NodeId id = 0; id < old_.size(); ++id) {
      const Node& n = old_.node(id);
      if (n.is_input()) continue;
      if (n.op == "quantize_linear" && requantize(id)) continue;
      if (auto p = match_product(old_, id)) {
        rw_.set(id, dequantized_product(*p));
        continue;
      }
      rw_.copy(id);
    }
    return dead_code_elimination(rw_.finish());
  }

 private:
  const Graph& old_;
  GraphRewriter rw_;

  Graph& g() { return rw_.graph(); }
  std::string name(NodeId old_id, const char* suffix) { return old_.node(old_id).name + suffix; }
  NodeId i32_scalar(NodeId old_id, const char* suffix, int64_t v) { return g().add_scalar(name(old_id, suffix), kI32, static_cast<double>(v)); }

  // The int32 accumulation of a product: int8 operands (centered in int32 where a zero
  // point is not zero) and out_dtype=int32.
  NodeId accumulate(const Product& p) {
    NodeId x = rw_.map(p.x);
    int64_t zx = p.xp.zero[0];
    if (zx != 0) {
      x = g().add_op("cast", {x}, {{"dtype", std::string("int32")}}, name(p.node, ".x_i32"));
      x = g().add_op("subtract", {x, i32_scalar(p.node, ".x_zero_point", zx)}, {}, name(p.node, ".x_centered"));
    }
    ConstData w = p.weight;
    if (!p.wp.symmetric() || zx != 0) {
      // w - zp_w in int32, per output channel (axis 0).
      int64_t per = w->size() / static_cast<int64_t>(p.wp.zero.size());
      std::vector<int64_t> v(static_cast<size_t>(w->size()));
      for (int64_t i = 0; i < w->size(); ++i) v[i] = w->get_int(i) - p.wp.zero[p.wp.per_tensor() ? 0 : i / per];
      w = int_buffer(kI32, w->shape(), v);
    }
    Attrs a = p.attrs;
    a.set("out_dtype", std::string("int32"));
    NodeId wc = g().add_constant(name(p.node, ".weight_q"), w);
    return g().add_op(p.op, {x, wc}, a, name(p.node, ".acc"));
  }

  // The float value of a product: dequantize_linear(acc, s_x * s_w) along the channels.
  NodeId dequantized_product(const Product& p) {
    NodeId acc = accumulate(p);
    std::vector<double> s;
    for (double sw : p.wp.scale) s.push_back(static_cast<double>(static_cast<float>(p.xp.scale[0]) * static_cast<float>(sw)));
    std::vector<int64_t> shape{static_cast<int64_t>(s.size())};
    NodeId sc = g().add_constant(name(p.node, ".scale"), float_buffer(shape, s));
    NodeId zp = g().add_constant(name(p.node, ".zero"), int_buffer(kI32, shape, std::vector<int64_t>(s.size(), 0)));
    int axis = p.op == "conv2d" ? 1 : old_.type(p.node).ndim() - 1;
    return g().add_op("dequantize_linear", {acc, sc, zp}, {{"axis", int64_t{axis}}}, old_.node(p.node).name);
  }

  // The shift form of quantize_linear `qid` where it applies; false to leave it.
  bool requantize(NodeId qid) {
    auto yp = qparams(old_, qid);
    if (!yp || yp->qtype != DataType::Int(8) || !yp->per_tensor() || !yp->symmetric()) return false;
    auto ey = pow2_exponent(yp->scale[0]);
    if (!ey) return false;
    NodeId f = old_.node(qid).inputs[0];
    if (passthrough(qid, f, *yp)) return true;
    bool relu = old_.node(f).op == "relu";
    if (relu) f = old_.node(f).inputs[0];
    if (residual(qid, f, *ey, relu)) return true;
    return conv_chain(qid, f, *ey, relu);
  }

  // quantize(op(dequantize(x))) with the same parameters, op a max_pool2d or reshape: op(x).
  bool passthrough(NodeId qid, NodeId f, const QParams& yp) {
    const Node& n = old_.node(f);
    if (n.op != "max_pool2d" && n.op != "reshape") return false;
    auto xp = qparams(old_, n.inputs[0]);
    if (!xp || old_.node(n.inputs[0]).op != "dequantize_linear" || xp->qtype != yp.qtype || xp->scale != yp.scale ||
        xp->zero != yp.zero)
      return false;
    NodeId x = rw_.map(old_.node(n.inputs[0]).inputs[0]);
    rw_.set(qid, g().add_op(n.op, {x}, n.attrs, old_.node(qid).name));
    return true;
  }

  // An int8 dequantize with zero point 0 and a power-of-two scale: its exponent.
  std::optional<int> pow2_input(NodeId id) {
    auto p = qparams(old_, id);
    if (!p || old_.node(id).op != "dequantize_linear" || p->qtype != DataType::Int(8) || !p->per_tensor() || !p->symmetric())
      return std::nullopt;
    return pow2_exponent(p->scale[0]);
  }

  // acc (int32, in units of 2^e) to int8 in units of 2^ey: a rounding shift, clip, cast.
  NodeId to_int8(NodeId qid, NodeId acc, int k, bool relu, bool rounding_added) {
    if (k > 0 && !rounding_added)
      acc = g().add_op("add", {acc, i32_scalar(qid, ".round", int64_t{1} << (k - 1))}, {}, name(qid, ".rounded"));
    if (k > 0) acc = g().add_op("right_shift", {acc, i32_scalar(qid, ".k", k)}, {}, name(qid, ".shifted"));
    if (k < 0) acc = g().add_op("left_shift", {acc, i32_scalar(qid, ".k", -k)}, {}, name(qid, ".shifted"));
    acc = g().add_op("clip", {acc}, {{"min", relu ? 0.0 : -128.0}, {"max", 127.0}}, name(qid, ".clipped"));
    return g().add_op("cast", {acc}, {{"dtype", std::string("int8")}}, old_.node(qid).name);
  }

  // add(dequantize(a), dequantize(b)), all scales powers of two.
  bool residual(NodeId qid, NodeId f, int ey, bool relu) {
    const Node& n = old_.node(f);
    if (n.op != "add") return false;
    auto ea = pow2_input(n.inputs[0]), eb = pow2_input(n.inputs[1]);
    if (!ea || !eb || old_.type(n.inputs[0]) != old_.type(n.inputs[1])) return false;
    int ec = std::min(*ea, *eb);
    auto operand = [&](NodeId dq, int e, const char* which) {
      NodeId v = g().add_op("cast", {rw_.map(old_.node(dq).inputs[0])}, {{"dtype", std::string("int32")}},
                            name(qid, fmt::format(".{}_i32", which).c_str()));
      if (e > ec) v = g().add_op("left_shift", {v, i32_scalar(qid, ".align", e - ec)}, {}, name(qid, fmt::format(".{}_aligned", which).c_str()));
      return v;
    };
    NodeId a = operand(n.inputs[0], *ea, "a"), b = operand(n.inputs[1], *eb, "b");
    NodeId sum = g().add_op("add", {a, b}, {}, name(qid, ".sum"));
    rw_.set(qid, to_int8(qid, sum, ey - ec, relu, false));
    return true;
  }

  // [add(] product [, constant bias)] in the shift form.
  bool conv_chain(NodeId qid, NodeId f, int ey, bool relu) {
    std::optional<ConstData> bias;
    const Node& n = old_.node(f);
    if (n.op == "add") {
      for (int side = 0; side < 2 && !bias; ++side) {
        if (!match_product(old_, n.inputs[side])) continue;
        bias = constant_value(old_, n.inputs[1 - side]);
        if (bias) f = n.inputs[side];
      }
      if (!bias) return false;
    }
    auto p = match_product(old_, f);
    if (!p || p->xp.qtype != DataType::Int(8) || !p->xp.symmetric() || p->wp.qtype != DataType::Int(8) ||
        !p->wp.per_tensor() || !p->wp.symmetric())
      return false;
    auto ex = pow2_exponent(p->xp.scale[0]), ew = pow2_exponent(p->wp.scale[0]);
    if (!ex || !ew) return false;
    int k = ey - *ex - *ew;
    if (k < 0) return false;
    int64_t channels = old_.type(f).shape[p->out_axis];
    double unit = std::ldexp(1.0, *ex + *ew);
    std::vector<int64_t> b(static_cast<size_t>(channels), 0);
    if (bias) {
      ConstData bv = *bias;
      if (bv->size() != channels && bv->size() != 1) return false;
      for (int64_t c = 0; c < channels; ++c) {
        double v = std::nearbyint(bv->get(bv->size() == 1 ? 0 : c) / unit);
        if (std::fabs(v) > 2147483647.0 / 2) return false;
        b[c] = static_cast<int64_t>(v);
      }
    }
    if (k > 0)
      for (auto& v : b) v += int64_t{1} << (k - 1);
    std::vector<int64_t> bshape = p->op == "conv2d" ? std::vector<int64_t>{1, channels, 1, 1} : std::vector<int64_t>{1, channels};
    NodeId acc = accumulate(*p);
    acc = g().add_op("add", {acc, g().add_constant(name(f, ".bias_q"), int_buffer(kI32, bshape, b))}, {}, name(f, ".biased"));
    rw_.set(qid, to_int8(qid, acc, k, relu, true));
    return true;
  }
};

}  // namespace

bool has_quantization(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.op == "quantize_linear" || n.op == "dequantize_linear") return true;
  return false;
}

Graph quantize_realize(const Graph& g) { return Realizer(g).run(); }

}  // namespace kiln::graph
