#include "compiler/frontend/onnx/quant_converters.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <limits>

#include "compiler/support/error.h"

namespace kiln::frontend {

using graph::Attrs;
using graph::NodeId;
using graph::TensorType;
using ir::DataType;

namespace {

[[noreturn]] void fail(const std::string& msg) { throw CompileError(msg); }

const DataType kI32 = DataType::Int(32);

bool is_q8(DataType t) { return t == DataType::Int(8) || t == DataType::UInt(8); }

// Zero points that are absent or constants of only zeros need no subtraction.
bool zero_point_is_zero(NodeContext& c, int k) {
  if (!c.has_input(k)) return true;
  const graph::Node& n = c.node_of(c.in(k));
  if (!n.is_constant()) return false;
  for (int64_t v : graph::constant_ints(n))
    if (v != 0) return false;
  return true;
}

// Operand `x` of an integer conv/matmul with zero point input `zp` (shape [] or [1],
// or per-row/column `per_shape` when it has that many values): x itself when the zero
// point is zero, else int32(x) - int32(zp).
NodeId centered(NodeContext& c, NodeId x, int zp, const std::vector<int64_t>& per_shape, const char* what) {
  if (!is_q8(c.type(x).dtype)) fail(fmt::format("{} must be int8 or uint8, not {}", what, c.type(x).dtype.to_string()));
  if (zero_point_is_zero(c, zp)) return x;
  NodeId z = c.in(zp);
  const TensorType zt = c.type(z);
  if (zt.dtype != c.type(x).dtype)
    fail(fmt::format("the zero point of {} is {}, the data {}", what, zt.dtype.to_string(), c.type(x).dtype.to_string()));
  if (zt.size() != 1) {
    int64_t n = 1;
    for (int64_t d : per_shape) n *= d;
    if (zt.size() != n || zt.ndim() != 1)
      fail(fmt::format("the zero point of {} has shape [{}]; a scalar or {} values expected", what, fmt::join(zt.shape, ", "), n));
    z = c.op("reshape", {z}, {{"shape", per_shape}});
  }
  NodeId xi = c.op("cast", {x}, {{"dtype", std::string("int32")}});
  NodeId zi = c.op("cast", {z}, {{"dtype", std::string("int32")}});
  return c.op("subtract", {xi, zi});
}

// The attributes of the integer product: out_dtype=int32 unless both operands are int32
// already (centered), in which case they accumulate in int32 as they are.
Attrs with_acc(Attrs a, NodeContext& c, NodeId x, NodeId w) {
  if (c.type(x).dtype != kI32 || c.type(w).dtype != kI32) {
    if (c.type(x).dtype == kI32) fail("internal: mixed centered operands");
    a.set("out_dtype", std::string("int32"));
  }
  return a;
}

// int32 conv2d of (x - x_zp) and (w - w_zp); both widened to int32 when either zero
// point is not zero (padding then pads the centered data with 0, as ONNX pads with
// the zero point).
NodeId integer_conv(NodeContext& c, int x, int xzp, int w, int wzp) {
  NodeId xv = c.in(x), wv = c.in(w);
  const TensorType xt = c.type(xv);
  const TensorType wt = c.type(wv);
  if (xt.ndim() != 4 || wt.ndim() != 4) fail("only 2-d (4-d NCHW) convolutions are supported");
  Attrs a = c.conv_attrs(xt, wt);
  bool center = !zero_point_is_zero(c, xzp) || !zero_point_is_zero(c, wzp);
  NodeId xc = centered(c, xv, xzp, {}, "the data"), wc = centered(c, wv, wzp, {wt.shape[0], 1, 1, 1}, "the weight");
  if (center) {
    if (c.type(xc).dtype != kI32) xc = c.op("cast", {xc}, {{"dtype", std::string("int32")}});
    if (c.type(wc).dtype != kI32) wc = c.op("cast", {wc}, {{"dtype", std::string("int32")}});
  }
  return c.op("conv2d", {xc, wc}, with_acc(a, c, xc, wc));
}

// int32 matmul of (a - a_zp) and (b - b_zp); a_zp may be per row of a ([M]), b_zp per
// column of b ([N]).
NodeId integer_matmul(NodeContext& c, int a, int azp, int b, int bzp) {
  NodeId av = c.in(a), bv = c.in(b);
  const TensorType at = c.type(av);
  const TensorType bt = c.type(bv);
  if (at.ndim() < 2 || bt.ndim() < 2) fail("only operands of rank 2 or more are supported");
  bool center = !zero_point_is_zero(c, azp) || !zero_point_is_zero(c, bzp);
  NodeId ac = centered(c, av, azp, {at.shape[at.ndim() - 2], 1}, "A");
  NodeId bc = centered(c, bv, bzp, {1, bt.shape.back()}, "B");
  if (center) {
    if (c.type(ac).dtype != kI32) ac = c.op("cast", {ac}, {{"dtype", std::string("int32")}});
    if (c.type(bc).dtype != kI32) bc = c.op("cast", {bc}, {{"dtype", std::string("int32")}});
  }
  return c.op("matmul", {ac, bc}, with_acc({}, c, ac, bc));
}

// Opset 21's blocked quantization (a scale per block of an axis): refused by name.
void check_block_size(NodeContext& c) {
  if (int64_t b = c.attr_int("block_size", 0); b != 0)
    fail(fmt::format("block_size {}: blocked quantization is not supported (per tensor or per axis)", b));
}

std::vector<NodeId> quantize_linear(NodeContext& c) {
  check_block_size(c);
  std::vector<NodeId> in = {c.in(0), c.in(1)};
  if (c.has_input(2)) {
    in.push_back(c.in(2));
  } else if (int64_t t = c.attr_int("output_dtype", 0); t != 0 && t != onnx::TensorProto::UINT8) {
    // Opset 21: the output type without a zero point; int8's zero point is 0 too.
    if (t != onnx::TensorProto::INT8) fail(fmt::format("output_dtype {} is not supported (int8 or uint8)", t));
    auto zero = std::make_shared<interp::HostBuffer>(DataType::Int(8), std::vector<int64_t>{});
    zero->set_int(0, 0);
    in.push_back(c.constant(zero));
  }
  return {c.op("quantize_linear", in, {{"axis", c.attr_int("axis", 1)}})};
}

std::vector<NodeId> dequantize_linear(NodeContext& c) {
  check_block_size(c);
  std::vector<NodeId> in = {c.in(0), c.in(1)};
  if (c.has_input(2)) in.push_back(c.in(2));
  // Kept on constants: quantize_realize reads the int8 weights and their scales.
  return {c.op_kept("dequantize_linear", in, {{"axis", c.attr_int("axis", 1)}})};
}

// uint8 with the scale and zero point of x's range widened to include 0:
// scale = (max(0, max x) - min(0, min x)) / 255, zero point = saturate(round(-min(0, min x) / scale)).
std::vector<NodeId> dynamic_quantize_linear(NodeContext& c) {
  NodeId x = c.in(0);
  const DataType f32 = DataType::Float(32);
  if (c.type(x).dtype != f32) fail("DynamicQuantizeLinear takes float32 data, not " + c.type(x).dtype.to_string());
  auto scalar = [&](double v) {
    auto b = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{});
    b->set(0, v);
    return c.constant(b);
  };
  Attrs whole{{"axes", std::vector<int64_t>{}}, {"keepdims", int64_t{0}}};
  NodeId hi = c.op("maximum", {c.op("max", {x}, whole), scalar(0)});
  NodeId lo = c.op("minimum", {c.op("min", {x}, whole), scalar(0)});
  NodeId scale = c.op("divide", {c.op("subtract", {hi, lo}), scalar(255)});
  // All-zero data has scale 0: divide by the smallest normal float instead, so that y
  // and the zero point are 0, not 0 / 0 (the scale output stays 0).
  NodeId divisor = c.op("maximum", {scale, scalar(std::numeric_limits<float>::min())});
  NodeId zp = c.op("clip", {c.op("round", {c.op("divide", {c.op("negative", {lo}), divisor})})}, {{"min", 0.0}, {"max", 255.0}});
  zp = c.op("cast", {zp}, {{"dtype", DataType::UInt(8).to_string()}});
  return {c.op("quantize_linear", {x, divisor, zp}), scale, zp};
}

// acc (int32, channels on `axis`) * (s_a * s_b) requantized to (s_y, zp_y).
NodeId requantize(NodeContext& c, NodeId acc, int sa, int sb, int sy, int zpy, int axis) {
  NodeId s = c.op("multiply", {c.in(sa), c.in(sb)});
  const TensorType st = c.type(s);
  if (st.size() > 1 && st.ndim() != 1) s = c.op("reshape", {s}, {{"shape", std::vector<int64_t>{st.size()}}});
  NodeId zero = c.constant(std::make_shared<interp::HostBuffer>(kI32, std::vector<int64_t>(c.type(s).shape)));
  NodeId f = c.op("dequantize_linear", {acc, s, zero}, {{"axis", int64_t{axis}}});
  return c.op("quantize_linear", {f, c.in(sy), c.in(zpy)}, {{"axis", int64_t{1}}});
}

std::vector<NodeId> qlinear_conv(NodeContext& c) {
  NodeId acc = integer_conv(c, 0, 2, 3, 5);
  if (c.has_input(8)) {
    NodeId b = c.in(8);
    if (c.type(b).dtype != kI32 || c.type(b).ndim() != 1) fail("the bias must be a 1-d int32 tensor");
    acc = c.op("add", {acc, c.op("reshape", {b}, {{"shape", std::vector<int64_t>{1, c.type(b).shape[0], 1, 1}}})});
  }
  return {requantize(c, acc, 1, 4, 6, 7, 1)};
}

std::vector<NodeId> qlinear_matmul(NodeContext& c) {
  NodeId acc = integer_matmul(c, 0, 2, 3, 5);
  return {requantize(c, acc, 1, 4, 6, 7, c.type(acc).ndim() - 1)};
}

std::vector<NodeId> conv_integer(NodeContext& c) { return {integer_conv(c, 0, 2, 1, 3)}; }

std::vector<NodeId> matmul_integer(NodeContext& c) { return {integer_matmul(c, 0, 2, 1, 3)}; }

}  // namespace

const std::map<std::string, QuantConverter>& quant_converters() {
  static const std::map<std::string, QuantConverter> m = {
      {"QuantizeLinear", quantize_linear}, {"DequantizeLinear", dequantize_linear}, {"QLinearConv", qlinear_conv},
      {"QLinearMatMul", qlinear_matmul},   {"ConvInteger", conv_integer},           {"MatMulInteger", matmul_integer},
      {"DynamicQuantizeLinear", dynamic_quantize_linear},
  };
  return m;
}

}  // namespace kiln::frontend
