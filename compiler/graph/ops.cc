// The graph operators: type inference and tensor-expression computes.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | relu sigmoid tanh exp sqrt erf negative abs identity dropout | x | - | elemwise |
// | leaky_relu | x | alpha | elemwise |
// | clip | x | min, max | elemwise |
// | hard_sigmoid | x | alpha, beta | elemwise |
// | hard_swish | x | - | elemwise |
// | cast | x | dtype ("float32", "int64", ...) | elemwise |
// | add subtract multiply divide power maximum minimum equal | a, b | - | broadcast |
// | where | cond, a, b | - | broadcast |
// | batch_norm | x, gamma, beta, mean, var | epsilon | broadcast (SimplifyInference removes it) |
// | conv2d | data [N,C,H,W], weight [O,C/g,KH,KW] | strides, pads [t,l,b,r], dilations, groups, out_dtype | out_elemwise_fusable |
// | conv2d_nchwc | data NCHW or NCHWc, weight [O/b,C/groups,KH,KW,b] (AlterLayout) | strides, pads, dilations, depthwise, groups, blocked_out | out_elemwise_fusable |
// | to_nchwc | x NCHW | block | injective |
// | from_nchwc | x NCHWc [N,C/b,H,W,b] | - | injective |
// | pack_conv_weight | weight OIHW | block | injective |
// | matmul_packed | x [M,K], weight [N/b,K,b] (AlterLayout) | - | out_elemwise_fusable |
// | pack_matmul_weight | w [N,K] or [K,N] | block, layout (nk, kn) | injective |
// | conv2d_transpose | data, weight [C,O,KH,KW] | strides, pads, dilations, output_padding | out_elemwise_fusable |
// | dense | x [N,K], w [M,K] | out_dtype | out_elemwise_fusable |
// | matmul | a [...,M,K], b [...,K,N] (batch dims broadcast) | out_dtype | out_elemwise_fusable |
// | max_pool2d avg_pool2d | x NCHW or NCHWc | kernel, strides, pads, dilations, ceil_mode, count_include_pad | out_elemwise_fusable |
// | global_avg_pool2d | x NCHW or NCHWc | - | comm_reduce |
// | sum mean max min | x | axes, keepdims | comm_reduce |
// | softmax | x | axis | opaque |
// | reshape | x | shape (static, resolved) | injective |
// | transpose | x | perm | injective |
// | concatenate | x... | axis | injective |
// | strided_slice | x | begin, end, steps (one per dimension) | injective |
// | take | data, indices | axis | injective |
// | broadcast_to | x | shape | broadcast |
// | pad | x | pads [before..., after...], value | injective |
//
// out_dtype ("int32"): integer operands (int8, uint8, ...) are widened to it and
// accumulated in it. The quantization operators are in ops_quant.cc; 3-d convolution
// and pooling and MaxPool's indices in ops_window.cc; the Winograd convolution in
// ops_winograd.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "compiler/graph/op.h"
#include "compiler/graph/ops_quant.h"
#include "compiler/graph/op_util.h"
#include "compiler/ir/analyzer.h"
#include "compiler/ir/op.h"
#include "compiler/ir/parse_type.h"
#include "compiler/support/error.h"
#include "compiler/te/ops.h"
#include "support/integer.h"

namespace kiln::graph {

using ir::Expr;
using ir::Var;
using te::Tensor;

const char* pattern_name(OpPattern p) {
  switch (p) {
    case OpPattern::ElemWise: return "elemwise";
    case OpPattern::Broadcast: return "broadcast";
    case OpPattern::Injective: return "injective";
    case OpPattern::CommReduce: return "comm_reduce";
    case OpPattern::OutEWiseFusable: return "out_elemwise_fusable";
    case OpPattern::Opaque: return "opaque";
  }
  return "?";
}

std::vector<Expr> te_shape(const TensorType& t) {
  if (t.shape.empty()) return {Expr(1)};
  std::vector<Expr> s;
  for (int64_t d : t.shape) s.push_back(Expr(static_cast<int>(d)));
  return s;
}

namespace detail {

void fail(const std::string& msg) { throw CompileError(msg); }

std::vector<Expr> as_exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

int normalize_axis(int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= std::max(rank, 1)) fail(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int64_t> broadcast_shapes(const std::vector<TensorType>& in) {
  size_t n = 0;
  for (const auto& t : in) n = std::max(n, t.shape.size());
  std::vector<int64_t> out(n, 1);
  for (const auto& t : in) {
    size_t off = n - t.shape.size();
    for (size_t d = 0; d < t.shape.size(); ++d) {
      int64_t x = t.shape[d];
      if (x == out[off + d] || x == 1) continue;
      if (out[off + d] != 1)
        fail(fmt::format("shapes [{}] do not broadcast at dimension {} ({} vs {})", fmt::join(t.shape, ", "), off + d, x,
                         out[off + d]));
      out[off + d] = x;
    }
  }
  return out;
}

// The indices into `t` (graph type `tt`) for output element `idx` under broadcasting.
std::vector<Expr> bcast_index(const TensorType& tt, const std::vector<Var>& idx) {
  if (tt.shape.empty()) return {Expr(0)};
  std::vector<Expr> out;
  size_t off = idx.size() - tt.shape.size();
  for (size_t d = 0; d < tt.shape.size(); ++d) out.push_back(tt.shape[d] == 1 ? Expr(0) : Expr(idx[off + d]));
  return out;
}

// Graph type of a te tensor made by compute_*: rebuild it from the te shape.
TensorType type_of(const Tensor& t, const std::vector<TensorType>* hint, size_t k) {
  if (hint) return (*hint)[k];
  TensorType r;
  r.dtype = t->dtype;
  for (const Expr& e : t->shape) r.shape.push_back(*ir::as_const_int(ir::simplify(e)));
  return r;
}

std::map<std::string, OpDef>& registry() {
  static std::map<std::string, OpDef> r;
  return r;
}

void reg(OpDef def) { registry()[def.name] = std::move(def); }

TensorType same_as_first(const std::vector<TensorType>& in, const Attrs&) { return in[0]; }

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d, bool ceil_mode) {
  int64_t span = in + p0 + p1 - d * (k - 1) - 1;
  if (span < 0) fail(fmt::format("the window ({} with dilation {}) is larger than the padded input ({})", k, d, in + p0 + p1));
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // A last window that starts in the padding is dropped (as PyTorch and ONNX do).
  if (ceil_mode && (out - 1) * s >= in + p0) out--;
  return out;
}

Window window(const Attrs& a, std::vector<int64_t> kernel) {
  auto s = a.get_ints("strides", {1, 1});
  auto p = a.get_ints("pads", {0, 0, 0, 0});
  auto d = a.get_ints("dilations", {1, 1});
  if (kernel.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2)
    fail("2-d windows need 2 kernel sizes, 2 strides, 4 pads and 2 dilations");
  for (int64_t v : s)
    if (v <= 0) fail("strides must be positive");
  for (int64_t v : d)
    if (v <= 0) fail("dilations must be positive");
  return {kernel[0], kernel[1], s[0], s[1], p[0], p[1], p[2], p[3], d[0], d[1]};
}

}  // namespace detail

namespace {

using namespace detail;

// ---------------------------------------------------------------- elementwise

Expr erf_approx(Expr x) {
  // x * P(x^2) / Q(x^2) on |x| <= 3.925 (beyond it erf rounds to +-1 in float32): a
  // minimax fit of the relative error (scripts/fit-erf.py), within 4e-7 of erf's value
  // (7 ulp in float32 evaluated as written, 6 with FMA) over the script's sample of
  // 400,000 floats in -4.5..4.5 and 2,000 from 1e-30 to 1. No exp: on an
  // AVX-512 Xeon 4.1 ns per 16 lanes, where Abramowitz and Stegun's 7.1.26 with libmvec's
  // expf took 6.7 (and erred by up to 1.5e-7 whatever erf's size). Both the
  // interpreter and the backends evaluate this expression; NaN stays NaN.
  static constexpr double kP[] = {2.007045019e-08, -1.888392376e-06, 1.266197214e-04, 3.101447364e-03,
                                  4.871262237e-02, 1.861201227e-01,  1.128379226e+00};
  static constexpr double kQ[] = {8.076294325e-04, 1.315142307e-02, 1.092596054e-01, 4.982798696e-01, 1.0};
  DataType t = x.dtype();
  auto c = [&](double v) { return ir::make_const(t, v); };
  auto horner = [&](const double* k, size_t n, const Expr& s) {
    Expr r = c(k[0]);
    for (size_t i = 1; i < n; ++i) r = r * s + c(k[i]);
    return r;
  };
  Expr a = ir::min(ir::abs(x), c(3.925));
  Expr s = a * a;
  Expr y = a * horner(kP, std::size(kP), s) / horner(kQ, std::size(kQ), s);
  return ir::select(x < c(0.0), -y, y);
}

void reg_unary(const std::string& name, std::function<Expr(Expr, const Attrs&)> f) {
  reg({name, OpPattern::ElemWise, 1, 0, same_as_first,
       [f, name](const std::vector<Tensor>& in, const Attrs& a, const TensorType&) {
         return te::compute(in[0]->shape, [&](const std::vector<Var>& i) { return f(in[0](as_exprs(i)), a); }, name,
                            "elemwise");
       }});
}

DataType parse_dtype(const std::string& s) {
  DataType t = ir::parse_type(s);
  if (t.is_vector() || t.is_handle()) fail("unsupported data type '" + s + "'");
  return t;
}

void register_elementwise() {
  auto zero = [](Expr v) { return ir::make_const(v.dtype(), 0); };
  reg_unary("relu", [zero](Expr v, const Attrs&) { return ir::max(v, zero(v)); });
  reg_unary("sigmoid", [](Expr v, const Attrs&) { return ir::sigmoid(v); });
  reg_unary("tanh", [](Expr v, const Attrs&) { return ir::tanh(v); });
  reg_unary("exp", [](Expr v, const Attrs&) { return ir::exp(v); });
  reg_unary("sqrt", [](Expr v, const Attrs&) { return ir::sqrt(v); });
  reg_unary("erf", [](Expr v, const Attrs&) { return erf_approx(v); });
  reg_unary("negative", [](Expr v, const Attrs&) { return -v; });
  reg_unary("abs", [](Expr v, const Attrs&) { return ir::abs(v); });
  reg_unary("identity", [](Expr v, const Attrs&) { return v; });
  reg_unary("dropout", [](Expr v, const Attrs&) { return v; });
  reg_unary("leaky_relu", [zero](Expr v, const Attrs& a) {
    return ir::select(v < zero(v), v * ir::make_const(v.dtype(), a.get_float("alpha", 0.01)), v);
  });
  reg_unary("clip", [](Expr v, const Attrs& a) {
    DataType t = v.dtype();
    if (a.has("min")) v = ir::max(v, ir::make_const(t, a.get_float("min")));
    if (a.has("max")) v = ir::min(v, ir::make_const(t, a.get_float("max")));
    return v;
  });
  reg_unary("hard_sigmoid", [](Expr v, const Attrs& a) {
    DataType t = v.dtype();
    Expr y = v * ir::make_const(t, a.get_float("alpha", 0.2)) + ir::make_const(t, a.get_float("beta", 0.5));
    return ir::min(ir::max(y, ir::make_const(t, 0)), ir::make_const(t, 1));
  });
  reg_unary("hard_swish", [](Expr v, const Attrs&) {
    DataType t = v.dtype();
    Expr y = v * ir::make_const(t, 1.0 / 6) + ir::make_const(t, 0.5);
    return v * ir::min(ir::max(y, ir::make_const(t, 0)), ir::make_const(t, 1));
  });
  reg({"cast", OpPattern::ElemWise, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         return TensorType{parse_dtype(a.get_string("dtype")), in[0].shape};
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         return te::compute(in[0]->shape, [&](const std::vector<Var>& i) { return ir::cast(out.dtype, in[0](as_exprs(i))); },
                            "cast", "elemwise");
       }});
}

// ---------------------------------------------------------------- broadcast

using Binary = std::function<Expr(Expr, Expr)>;

void reg_binary(const std::string& name, Binary f, bool to_bool = false) {
  reg({name, OpPattern::Broadcast, 2, 0,
       [to_bool](const std::vector<TensorType>& in, const Attrs&) {
         if (in[0].dtype != in[1].dtype)
           fail(fmt::format("operand types differ ({} and {})", in[0].dtype.to_string(), in[1].dtype.to_string()));
         return TensorType{to_bool ? DataType::Bool() : in[0].dtype, broadcast_shapes(in)};
       },
       [f, name](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType a = type_of(in[0]), b = type_of(in[1]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) { return f(in[0](bcast_index(a, i)), in[1](bcast_index(b, i))); },
                            name, "broadcast");
       }});
}

void register_broadcast() {
  reg_binary("add", [](Expr x, Expr y) { return x + y; });
  reg_binary("subtract", [](Expr x, Expr y) { return x - y; });
  reg_binary("multiply", [](Expr x, Expr y) { return x * y; });
  reg_binary("divide", [](Expr x, Expr y) { return x / y; });
  reg_binary("maximum", [](Expr x, Expr y) { return ir::max(x, y); });
  reg_binary("minimum", [](Expr x, Expr y) { return ir::min(x, y); });
  // By 2, 1 or 0.5: x * x, x, sqrt(x), in the simplifier (ir/simplify.cc), which also
  // sees the exponents that become immediates only in lowering.
  reg_binary("power", [](Expr x, Expr y) { return ir::pow(x, y); });
  reg_binary("equal", [](Expr x, Expr y) { return ir::eq(x, y); }, true);

  reg({"where", OpPattern::Broadcast, 3, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         if (!in[0].dtype.is_bool()) fail("the condition must be bool, not " + in[0].dtype.to_string());
         if (in[1].dtype != in[2].dtype) fail("the two branches have different types");
         return TensorType{in[1].dtype, broadcast_shapes(in)};
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType c = type_of(in[0]), a = type_of(in[1]), b = type_of(in[2]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              return ir::select(in[0](bcast_index(c, i)), in[1](bcast_index(a, i)), in[2](bcast_index(b, i)));
                            },
                            "where", "broadcast");
       }});

  reg({"broadcast_to", OpPattern::Broadcast, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         std::vector<TensorType> both = {in[0], TensorType{in[0].dtype, a.get_ints("shape")}};
         return TensorType{in[0].dtype, broadcast_shapes(both)};
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType x = type_of(in[0]);
         return te::compute(te_shape(out), [&](const std::vector<Var>& i) { return in[0](bcast_index(x, i)); }, "broadcast_to",
                            "broadcast");
       }});

  // y = (x - mean) / sqrt(var + eps) * gamma + beta, channels on axis 1.
  reg({"batch_norm", OpPattern::Broadcast, 5, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         if (in[0].ndim() < 2) fail("the input needs a channel axis");
         for (int k = 1; k < 5; ++k)
           if (in[k].shape != std::vector<int64_t>{in[0].shape[1]})
             fail(fmt::format("parameter {} has shape [{}], expected [{}]", k, fmt::join(in[k].shape, ", "), in[0].shape[1]));
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType&) {
         DataType t = in[0]->dtype;
         return te::compute(in[0]->shape,
                            [&](const std::vector<Var>& i) {
                              Var c = i[1];
                              Expr inv = ir::make_const(t, 1.0) / ir::sqrt(in[4](c) + ir::make_const(t, a.get_float("epsilon", 1e-5)));
                              return (in[0](as_exprs(i)) - in[3](c)) * inv * in[1](c) + in[2](c);
                            },
                            "batch_norm", "broadcast");
       }});
}

// ---------------------------------------------------------------- conv, dense, matmul, pooling

TensorType infer_conv2d(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  if (x.size() != 4) fail("data must be 4-d NCHW");
  if (w.size() != 4) fail("weight must be 4-d OIHW");
  int64_t g = a.get_int("groups", 1);
  if (g <= 0 || x[1] % g != 0 || w[0] % g != 0) fail(fmt::format("groups={} does not divide the channels", g));
  if (w[1] * g != x[1]) fail(fmt::format("weight expects {} input channels, data has {}", w[1] * g, x[1]));
  if (!has_out_dtype(a) && in[0].dtype != in[1].dtype) fail("data and weight types differ");
  DataType t = accumulation_type(in[0], in[1], a);
  Window win = window(a, {w[2], w[3]});
  return TensorType{t,
                    {x[0], w[0], conv_out(x[2], win.kh, win.sh, win.pt, win.pb, win.dh), conv_out(x[3], win.kw, win.sw, win.pl, win.pr, win.dw)}};
}

// The rows from which a depthwise convolution's padding, inlined into its loads, splits
// its border from its interior (compute_depthwise_nchwc).
constexpr int64_t kSplitBorderRows = 56;

// NCHW data [N, C, H, W] with zero rows and columns around its image (split_border:
// te::pad's).
Tensor pad_nchw(const Tensor& x, const Window& w, bool split_border = false) {
  if (!w.pt && !w.pl && !w.pb && !w.pr) return x;
  return te::pad(x, {0, 0, static_cast<int>(w.pt), static_cast<int>(w.pl)}, {0, 0, static_cast<int>(w.pb), static_cast<int>(w.pr)},
                 Expr(), "pad", split_border);
}

Tensor compute_conv2d(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType wt = type_of(in[1]);
  Window w = window(a, {wt.shape[2], wt.shape[3]});
  Tensor data = pad_nchw(in[0], w);
  int64_t g = a.get_int("groups", 1);
  int64_t cin_g = wt.shape[1], cout_g = out.shape[1] / g;
  ir::IterVar rc = te::reduce_axis(static_cast<int>(cin_g), "rc");
  ir::IterVar ry = te::reduce_axis(static_cast<int>(w.kh), "ry");
  ir::IterVar rx = te::reduce_axis(static_cast<int>(w.kw), "rx");
  const Tensor& weight = in[1];
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr c = g == 1 ? Expr(rc->var) : Expr(i[1] / static_cast<int>(cout_g) * static_cast<int>(cin_g) + rc->var);
        Expr y = i[2] * static_cast<int>(w.sh) + ry->var * static_cast<int>(w.dh);
        Expr x = i[3] * static_cast<int>(w.sw) + rx->var * static_cast<int>(w.dw);
        return te::sum(ir::cast(out.dtype, data(i[0], c, y, x)) * ir::cast(out.dtype, weight(i[1], rc->var, ry->var, rx->var)),
                       {rc, ry, rx});
      },
      "conv2d", "conv2d");
}

TensorType infer_conv2d_transpose(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  if (x.size() != 4 || w.size() != 4) fail("data and weight must be 4-d");
  if (a.get_int("groups", 1) != 1) fail("only groups=1 is supported");
  if (w[0] != x[1]) fail(fmt::format("weight expects {} input channels, data has {}", w[0], x[1]));
  Window win = window(a, {w[2], w[3]});
  auto op = a.get_ints("output_padding", {0, 0});
  int64_t h = (x[2] - 1) * win.sh - win.pt - win.pb + win.dh * (win.kh - 1) + op[0] + 1;
  int64_t wd = (x[3] - 1) * win.sw - win.pl - win.pr + win.dw * (win.kw - 1) + op[1] + 1;
  if (h <= 0 || wd <= 0) fail("the output would be empty");
  return TensorType{in[0].dtype, {x[0], w[1], h, wd}};
}

// out[n,o,y,x] = sum over c,ky,kx with y + pt - ky*dh = iy*sh of data[n,c,iy,ix] * w[c,o,ky,kx].
Tensor compute_conv2d_transpose(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType xt = type_of(in[0]), wt = type_of(in[1]);
  Window w = window(a, {wt.shape[2], wt.shape[3]});
  ir::IterVar rc = te::reduce_axis(static_cast<int>(xt.shape[1]), "rc");
  ir::IterVar ry = te::reduce_axis(static_cast<int>(w.kh), "ry");
  ir::IterVar rx = te::reduce_axis(static_cast<int>(w.kw), "rx");
  auto I = [](int64_t v) { return Expr(static_cast<int>(v)); };
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr ty = i[2] + I(w.pt) - ry->var * I(w.dh);
        Expr tx = i[3] + I(w.pl) - rx->var * I(w.dw);
        Expr iy = ty / I(w.sh), ix = tx / I(w.sw);
        Expr ok = ty >= 0 && tx >= 0 && ir::eq(ty % I(w.sh), 0) && ir::eq(tx % I(w.sw), 0) && iy < I(xt.shape[2]) && ix < I(xt.shape[3]);
        Expr cy = ir::min(ir::max(iy, 0), I(xt.shape[2] - 1)), cx = ir::min(ir::max(ix, 0), I(xt.shape[3] - 1));
        Expr v = ir::select(ok, in[0](i[0], rc->var, cy, cx), ir::make_const(xt.dtype, 0));
        return te::sum(v * in[1](rc->var, i[1], ry->var, rx->var), {rc, ry, rx});
      },
      "conv2d_transpose", "conv2d_transpose");
}

TensorType infer_dense(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[0].ndim() != 2 || in[1].ndim() != 2) fail("dense takes matrices");
  if (in[0].shape[1] != in[1].shape[1])
    fail(fmt::format("reduction sizes differ ({} and {})", in[0].shape[1], in[1].shape[1]));
  return TensorType{accumulation_type(in[0], in[1], a), {in[0].shape[0], in[1].shape[0]}};
}

// y[n, m] = sum_k x[n, k] * w[m, k], accumulated in the output's type.
Tensor compute_dense(const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
  if (out.dtype == in[0]->dtype && out.dtype == in[1]->dtype) return te::dense(in[0], in[1]);
  ir::IterVar k = te::reduce_axis(in[0]->shape[1], "k");
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) {
                       return te::sum(ir::cast(out.dtype, in[0](i[0], k->var)) * ir::cast(out.dtype, in[1](i[1], k->var)), {k});
                     },
                     "dense", "dense");
}

TensorType infer_matmul(const std::vector<TensorType>& in, const Attrs& attrs) {
  const auto& a = in[0].shape;
  const auto& b = in[1].shape;
  if (a.size() < 2 || b.size() < 2) fail("matmul operands need at least 2 dimensions");
  if (a.back() != b[b.size() - 2]) fail(fmt::format("inner dimensions differ ({} and {})", a.back(), b[b.size() - 2]));
  TensorType ba{in[0].dtype, std::vector<int64_t>(a.begin(), a.end() - 2)};
  TensorType bb{in[1].dtype, std::vector<int64_t>(b.begin(), b.end() - 2)};
  std::vector<int64_t> s = broadcast_shapes({ba, bb});
  s.push_back(a[a.size() - 2]);
  s.push_back(b.back());
  return TensorType{accumulation_type(in[0], in[1], attrs), s};
}

Tensor compute_matmul(const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
  TensorType at = type_of(in[0]), bt = type_of(in[1]);
  ir::IterVar k = te::reduce_axis(static_cast<int>(at.shape.back()), "k");
  size_t r = out.shape.size();
  auto batch_index = [&](const TensorType& t, const std::vector<Var>& i, Expr row, Expr col) {
    std::vector<Expr> idx;
    size_t tb = t.shape.size() - 2, off = (r - 2) - tb;
    for (size_t d = 0; d < tb; ++d) idx.push_back(t.shape[d] == 1 ? Expr(0) : Expr(i[off + d]));
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  };
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) {
                       return te::sum(ir::cast(out.dtype, in[0](batch_index(at, i, i[r - 2], k->var))) *
                                          ir::cast(out.dtype, in[1](batch_index(bt, i, k->var, i[r - 1]))),
                                      {k});
                     },
                     "matmul", "matmul");
}

TensorType infer_pool(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& x = in[0].shape;
  if (x.size() != 4 && x.size() != 5) fail("pooling takes 4-d NCHW data (or NCHWc, 5-d)");
  Window w = window(a, a.get_ints("kernel"));
  bool ceil_mode = a.get_int("ceil_mode", 0) != 0;
  if (w.pt >= w.kh || w.pb >= w.kh || w.pl >= w.kw || w.pr >= w.kw) fail("pads must be smaller than the window");
  std::vector<int64_t> shape = x;
  shape[2] = conv_out(x[2], w.kh, w.sh, w.pt, w.pb, w.dh, ceil_mode);
  shape[3] = conv_out(x[3], w.kw, w.sw, w.pl, w.pr, w.dw, ceil_mode);
  return TensorType{in[0].dtype, shape};
}

Tensor compute_pool(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out, bool is_max) {
  TensorType xt = type_of(in[0]);
  Window w = window(a, a.get_ints("kernel"));
  auto I = [](int64_t v) { return Expr(static_cast<int>(v)); };
  int64_t H = xt.shape[2], W = xt.shape[3];
  ir::IterVar ry = te::reduce_axis(I(w.kh), "ry"), rx = te::reduce_axis(I(w.kw), "rx");
  DataType t = xt.dtype;
  auto at = [&](const std::vector<Var>& i, Expr* ok) {
    Expr y = i[2] * I(w.sh) - I(w.pt) + ry->var * I(w.dh);
    Expr x = i[3] * I(w.sw) - I(w.pl) + rx->var * I(w.dw);
    *ok = y >= 0 && y < I(H) && x >= 0 && x < I(W);
    std::vector<Expr> at = {i[0], i[1], ir::min(ir::max(y, 0), I(H - 1)), ir::min(ir::max(x, 0), I(W - 1))};
    if (xt.ndim() == 5) at.push_back(i[4]);  // NCHWc: the channel inside the block
    return in[0](at);
  };
  if (is_max)
    return te::compute(te_shape(out),
                       [&](const std::vector<Var>& i) {
                         Expr ok;
                         Expr v = at(i, &ok);
                         return te::max_reduce(v, {ry, rx}, ok);
                       },
                       "max_pool2d", "pool");
  Tensor s = te::compute(te_shape(out),
                         [&](const std::vector<Var>& i) {
                           Expr ok;
                           Expr v = at(i, &ok);
                           return te::sum(ir::select(ok, v, ir::make_const(t, 0)), {ry, rx});
                         },
                         "avg_pool2d.sum", "pool");
  bool include_pad = a.get_int("count_include_pad", 0) != 0;
  // The divisor (as PyTorch): the window clipped to the padded input, or to the input.
  auto count = [&](Expr o, int64_t s_, int64_t p0, int64_t p1, int64_t k, int64_t n) {
    Expr start = o * I(s_) - I(p0);
    Expr end = ir::min(start + I(k), I(n + p1));
    if (!include_pad) {
      start = ir::max(start, 0);
      end = ir::min(end, I(n));
    }
    return end - start;
  };
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) {
                       Expr n = count(i[2], w.sh, w.pt, w.pb, w.kh, H) * count(i[3], w.sw, w.pl, w.pr, w.kw, W);
                       return s(as_exprs(i)) / ir::cast(t, n);
                     },
                     "avg_pool2d", "pool");
}

// Conv2d with weights pre-packed as [O/b, C, KH, KW, b] (AlterLayout): the output is
// computed in blocks of b channels (stage tag "conv2d_nchwc", [N, O/b, OH, OW, b], so
// the channel block is the vector). The data is NCHW or already blocked, NCHWc
// [N, C/c, H, W, c] (CarryLayout); the result is viewed as NCHW for the ops that follow,
// or with `blocked_out` stays NCHWc, so the next convolution reads it as it is.
TensorType infer_conv2d_nchwc(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  if ((x.size() != 4 && x.size() != 5) || w.size() != 5)
    fail("conv2d_nchwc takes NCHW or NCHWc data and a [O/b, C, KH, KW, b] weight");
  int64_t channels = x.size() == 5 ? x[1] * x[4] : x[1];
  int64_t groups = a.get_int("groups", 1);
  if (groups > 1) {
    // Grouped: each block of b output channels lies in one group, whose w[1] input
    // channels it reads.
    int64_t o = w[0] * w[4];
    if (w[1] * groups != channels || o % groups || (o / groups) % w[4])
      fail(fmt::format("a weight of shape [{}] in {} groups does not fit {} input channels in blocks of {} output channels", fmt::join(w, ", "),
                       groups, channels, w[4]));
  } else if (a.get_int("depthwise", 0)) {
    if (w[1] != 1 || w[0] * w[4] != channels)
      fail(fmt::format("a depthwise weight for {} channels cannot have shape [{}]", channels, fmt::join(w, ", ")));
    if (x.size() == 5 && x[4] != w[4]) fail(fmt::format("depthwise data in blocks of {} needs a weight in blocks of {}, not {}", x[4], x[4], w[4]));
  } else if (w[1] != channels) {
    fail(fmt::format("weight expects {} input channels, data has {}", w[1], channels));
  }
  Window win = window(a, {w[2], w[3]});
  int64_t oh = conv_out(x[2], win.kh, win.sh, win.pt, win.pb, win.dh), ow = conv_out(x[3], win.kw, win.sw, win.pl, win.pr, win.dw);
  if (a.get_int("blocked_out", 0)) return TensorType{in[0].dtype, {x[0], w[0], oh, ow, w[4]}};
  return TensorType{in[0].dtype, {x[0], w[0] * w[4], oh, ow}};
}

// Blocked data [N, C/b, H, W, b] with zero rows and columns around its image
// (split_border: te::pad's).
Tensor pad_blocked(const Tensor& x, const Window& w, bool split_border = false) {
  if (!w.pt && !w.pl && !w.pb && !w.pr) return x;
  return te::pad(x, {0, 0, static_cast<int>(w.pt), static_cast<int>(w.pl), 0}, {0, 0, static_cast<int>(w.pb), static_cast<int>(w.pr), 0},
                 Expr(), "pad", split_border);
}

// The blocked result as the op's output: itself, or viewed as NCHW.
Tensor view_blocked(const Tensor& blocked, int64_t b, const TensorType& out) {
  if (out.ndim() == 5) return blocked;
  auto I = [](int64_t v) { return Expr(static_cast<int>(v)); };
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) { return blocked(i[0], i[1] / I(b), i[2], i[3], i[1] % I(b)); },
                     "conv2d_nchw_view", "injective");
}

// Depthwise: the padded input in channel blocks [N, C/b, H', W', b] (so the
// convolution's loads are vectors too; NCHW data is copied into them), then each
// channel block is filtered.
Tensor compute_depthwise_nchwc(const std::vector<Tensor>& in, const Window& w, int64_t b, const TensorType& out) {
  auto I = [](int64_t v) { return Expr(static_cast<int>(v)); };
  TensorType xt = type_of(in[0]);
  int64_t H = xt.shape[2], W = xt.shape[3];
  Tensor xb;
  if (xt.ndim() == 5) {
    // Inlined into the filter's loads (lower_group): on an image of 56 rows or more the
    // interior's loads go without the border's selects. MobileNetV2's filters at 112 x
    // 112 and 56 x 56 (with their pointwise convolutions) at one thread here: 0.173 ->
    // 0.133, 0.239 -> 0.189 and 0.276 -> 0.223 ms; smaller images gained nothing for
    // their share of the code.
    xb = pad_blocked(in[0], w, H >= kSplitBorderRows);
  } else {
    xb = te::compute(
        {I(xt.shape[0]), I(xt.shape[1] / b), I(H + w.pt + w.pb), I(W + w.pl + w.pr), I(b)},
        [&](const std::vector<Var>& i) {
          Expr y = i[2] - I(w.pt), x = i[3] - I(w.pl);
          Expr ok = y >= 0 && y < I(H) && x >= 0 && x < I(W);
          Expr v = in[0](i[0], i[1] * I(b) + i[4], ir::min(ir::max(y, 0), I(H - 1)), ir::min(ir::max(x, 0), I(W - 1)));
          return ir::select(ok, v, ir::make_const(xt.dtype, 0));
        },
        "pack_nchwc", "injective");
  }
  ir::IterVar ry = te::reduce_axis(I(w.kh), "ry"), rx = te::reduce_axis(I(w.kw), "rx");
  Tensor blocked = te::compute(
      {I(out.shape[0]), I(type_of(in[1]).shape[0]), I(out.shape[2]), I(out.shape[3]), I(b)},
      [&](const std::vector<Var>& i) {
        Expr y = i[2] * I(w.sh) + ry->var * I(w.dh);
        Expr x = i[3] * I(w.sw) + rx->var * I(w.dw);
        return te::sum(xb(i[0], i[1], y, x, i[4]) * in[1](i[1], 0, ry->var, rx->var, i[4]), {ry, rx});
      },
      "depthwise_conv2d_nchwc", "conv2d_nchwc");
  return view_blocked(blocked, b, out);
}

// Grouped (not depthwise): the output block ob lies in group ob / (blocks a group),
// whose cg input channels the reduction rc runs over. On NCHWc data (any block c) the
// channel g * cg + rc is at block (g * cg + rc) / c, lane (g * cg + rc) % c; either way
// each element of the data is a broadcast, as in the ungrouped convolution on NCHW data.
Tensor compute_grouped_nchwc(const std::vector<Tensor>& in, const Window& w, int64_t b, int64_t groups, const TensorType& out) {
  auto I = [](int64_t v) { return Expr(static_cast<int>(v)); };
  TensorType wt = type_of(in[1]);
  int64_t cg = wt.shape[1], per_group = wt.shape[0] / groups;  // blocks a group
  bool blocked_in = in[0]->shape.size() == 5;
  Tensor data = blocked_in ? pad_blocked(in[0], w) : pad_nchw(in[0], w);
  int64_t c = blocked_in ? *ir::as_const_int(in[0]->shape[4]) : 1;
  ir::IterVar rc = te::reduce_axis(I(cg), "rc"), ry = te::reduce_axis(I(w.kh), "ry"), rx = te::reduce_axis(I(w.kw), "rx");
  Tensor blocked = te::compute(
      {I(out.shape[0]), I(wt.shape[0]), I(out.shape[2]), I(out.shape[3]), I(b)},
      [&](const std::vector<Var>& i) {
        Expr y = i[2] * I(w.sh) + ry->var * I(w.dh);
        Expr x = i[3] * I(w.sw) + rx->var * I(w.dw);
        Expr ch = i[1] / I(per_group) * I(cg) + rc->var;
        Expr v = blocked_in ? data(i[0], ch / I(c), y, x, ch % I(c)) : data(i[0], ch, y, x);
        return te::sum(v * in[1](i[1], rc->var, ry->var, rx->var, i[4]), {rc, ry, rx});
      },
      "conv2d_nchwc", "conv2d_nchwc");
  return view_blocked(blocked, b, out);
}

Tensor compute_conv2d_nchwc(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType wt = type_of(in[1]);
  Window w = window(a, {wt.shape[2], wt.shape[3]});
  auto I = [](int64_t v) { return Expr(static_cast<int>(v)); };
  int64_t b = wt.shape[4];
  const Tensor& weight = in[1];
  if (a.get_int("depthwise", 0)) return compute_depthwise_nchwc(in, w, b, out);
  if (a.get_int("groups", 1) > 1) return compute_grouped_nchwc(in, w, b, a.get_int("groups", 1), out);
  ir::IterVar ry = te::reduce_axis(I(w.kh), "ry");
  ir::IterVar rx = te::reduce_axis(I(w.kw), "rx");
  std::vector<Expr> shape = {I(out.shape[0]), I(wt.shape[0]), I(out.shape[2]), I(out.shape[3]), I(b)};
  Tensor blocked;
  if (in[0]->shape.size() == 5) {
    // Blocked data: the reduction over channels is one over blocks (rc) and one inside
    // a block (rci), so every load of the data is at a constant offset.
    Tensor data = pad_blocked(in[0], w);
    int64_t c = *ir::as_const_int(in[0]->shape[4]);
    ir::IterVar rc = te::reduce_axis(I(*ir::as_const_int(in[0]->shape[1])), "rc");
    ir::IterVar rci = te::reduce_axis(I(c), "rci");
    blocked = te::compute(
        shape,
        [&](const std::vector<Var>& i) {
          Expr y = i[2] * I(w.sh) + ry->var * I(w.dh);
          Expr x = i[3] * I(w.sw) + rx->var * I(w.dw);
          return te::sum(data(i[0], rc->var, y, x, rci->var) * weight(i[1], rc->var * I(c) + rci->var, ry->var, rx->var, i[4]),
                         {rc, ry, rx, rci});
        },
        "conv2d_nchwc", "conv2d_nchwc");
    return view_blocked(blocked, b, out);
  }
  // NCHW data (a network's first convolution, on its image): its padded copy loads a
  // row's interior as vectors, without the columns' tests and the clamps that made them
  // gathers (the row's test, of a fused index, stays a select). ResNet-18's 7x7
  // convolution and MobileNetV2's first one at one thread here: 1.30 -> 1.20 and 0.236
  // -> 0.144 ms.
  Tensor data = pad_nchw(in[0], w, true);
  ir::IterVar rc = te::reduce_axis(I(wt.shape[1]), "rc");
  blocked = te::compute(
      shape,
      [&](const std::vector<Var>& i) {
        Expr y = i[2] * I(w.sh) + ry->var * I(w.dh);
        Expr x = i[3] * I(w.sw) + rx->var * I(w.dw);
        return te::sum(data(i[0], rc->var, y, x) * weight(i[1], rc->var, ry->var, rx->var, i[4]), {rc, ry, rx});
      },
      "conv2d_nchwc", "conv2d_nchwc");
  return view_blocked(blocked, b, out);
}

// Activations between NCHW and NCHWc [N, C/b, H, W, b] (CarryLayout's edges).
TensorType infer_to_nchwc(const std::vector<TensorType>& in, const Attrs& a) {
  int64_t b = a.get_int("block", 0);
  const auto& x = in[0].shape;
  if (x.size() != 4 || b <= 0 || x[1] % b) fail(fmt::format("cannot block {} into channel blocks of {}", in[0].to_string(), b));
  return TensorType{in[0].dtype, {x[0], x[1] / b, x[2], x[3], b}};
}

Tensor compute_to_nchwc(const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
  int b = static_cast<int>(out.shape[4]);
  return te::compute(te_shape(out), [&](const std::vector<Var>& i) { return in[0](i[0], i[1] * b + i[4], i[2], i[3]); }, "to_nchwc",
                     "injective");
}

TensorType infer_from_nchwc(const std::vector<TensorType>& in, const Attrs&) {
  const auto& x = in[0].shape;
  if (x.size() != 5) fail("from_nchwc takes NCHWc data [N, C/b, H, W, b], not " + in[0].to_string());
  return TensorType{in[0].dtype, {x[0], x[1] * x[4], x[2], x[3]}};
}

Tensor compute_from_nchwc(const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
  int b = static_cast<int>(*ir::as_const_int(in[0]->shape[4]));
  return te::compute(te_shape(out), [&](const std::vector<Var>& i) { return in[0](i[0], i[1] / b, i[2], i[3], i[1] % b); },
                     "from_nchwc", "injective");
}

// A constant matrix product's weight in panels of b columns, [N/b, K, b] (AlterLayout),
// from a dense weight W[N, K] (layout "nk") or a matmul operand B[K, N] ("kn"): a
// register tile of b columns then reads one contiguous row of b values per k.
TensorType infer_pack_matmul_weight(const std::vector<TensorType>& in, const Attrs& a) {
  int64_t b = a.get_int("block", 16);
  std::string l = a.get_string("layout", "nk");
  const auto& w = in[0].shape;
  if (l != "nk" && l != "kn") fail("layout must be nk or kn, not '" + l + "'");
  if (w.size() != 2) fail("pack_matmul_weight takes a matrix, not " + in[0].to_string());
  int64_t n = l == "nk" ? w[0] : w[1], k = l == "nk" ? w[1] : w[0];
  if (b <= 0 || n % b) fail(fmt::format("cannot pack {} columns into panels of {}", n, b));
  return TensorType{in[0].dtype, {n / b, k, b}};
}

Tensor compute_pack_matmul_weight(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  int b = static_cast<int>(out.shape[2]);
  bool nk = a.get_string("layout", "nk") == "nk";
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) {
                       Expr col = i[0] * b + i[2];
                       return nk ? in[0](col, i[1]) : in[0](i[1], col);
                     },
                     "pack_matmul_weight", "injective");
}

// y[M, N] = x[M, K] . the packed weight [N/b, K, b] (stage tag "matmul_packed").
TensorType infer_matmul_packed(const std::vector<TensorType>& in, const Attrs&) {
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  if (x.size() != 2 || w.size() != 3) fail("matmul_packed takes a matrix and a [N/b, K, b] weight");
  if (x[1] != w[1]) fail(fmt::format("reduction sizes differ ({} and {})", x[1], w[1]));
  if (in[0].dtype != in[1].dtype || !in[0].dtype.is_float()) fail("matmul_packed takes float operands of one type");
  return TensorType{in[0].dtype, {x[0], w[0] * w[2]}};
}

Tensor compute_matmul_packed(const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
  TensorType wt = type_of(in[1]);
  int b = static_cast<int>(wt.shape[2]);
  ir::IterVar k = te::reduce_axis(static_cast<int>(wt.shape[1]), "k");
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) { return te::sum(in[0](i[0], k->var) * in[1](i[1] / b, k->var, i[1] % b), {k}); },
                     "matmul_packed", "matmul_packed");
}

void register_nn() {
  reg({"conv2d_nchwc", OpPattern::OutEWiseFusable, 2, 0, infer_conv2d_nchwc, compute_conv2d_nchwc});
  reg({"to_nchwc", OpPattern::Injective, 1, 0, infer_to_nchwc, compute_to_nchwc});
  reg({"from_nchwc", OpPattern::Injective, 1, 0, infer_from_nchwc, compute_from_nchwc});
  reg({"pack_matmul_weight", OpPattern::Injective, 1, 0, infer_pack_matmul_weight, compute_pack_matmul_weight});
  reg({"matmul_packed", OpPattern::OutEWiseFusable, 2, 0, infer_matmul_packed, compute_matmul_packed});
  reg({"pack_conv_weight", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         int64_t b = a.get_int("block", 16);
         const auto& w = in[0].shape;
         if (w.size() != 4 || b <= 0 || w[0] % b) fail(fmt::format("cannot pack an OIHW weight of {} into blocks of {}", in[0].to_string(), b));
         return TensorType{in[0].dtype, {w[0] / b, w[1], w[2], w[3], b}};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int b = static_cast<int>(a.get_int("block", 16));
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) { return in[0](i[0] * b + i[4], i[1], i[2], i[3]); },
                            "pack_conv_weight", "injective");
       }});
  reg({"conv2d", OpPattern::OutEWiseFusable, 2, 0, infer_conv2d, compute_conv2d});
  reg({"conv2d_transpose", OpPattern::OutEWiseFusable, 2, 0, infer_conv2d_transpose, compute_conv2d_transpose});
  reg({"dense", OpPattern::OutEWiseFusable, 2, 0, infer_dense, compute_dense});
  reg({"matmul", OpPattern::OutEWiseFusable, 2, 0, infer_matmul, compute_matmul});
  reg({"max_pool2d", OpPattern::OutEWiseFusable, 1, 0, infer_pool,
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& o) { return compute_pool(in, a, o, true); }});
  reg({"avg_pool2d", OpPattern::OutEWiseFusable, 1, 0, infer_pool,
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& o) { return compute_pool(in, a, o, false); }});
  reg({"global_avg_pool2d", OpPattern::CommReduce, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         if (in[0].ndim() != 4 && in[0].ndim() != 5) fail("global pooling takes 4-d NCHW data (or NCHWc, 5-d)");
         std::vector<int64_t> shape = in[0].shape;
         shape[2] = shape[3] = 1;
         return TensorType{in[0].dtype, shape};
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType xt = type_of(in[0]);
         ir::IterVar ry = te::reduce_axis(static_cast<int>(xt.shape[2]), "ry");
         ir::IterVar rx = te::reduce_axis(static_cast<int>(xt.shape[3]), "rx");
         Tensor s = te::compute(te_shape(out),
                                [&](const std::vector<Var>& i) {
                                  std::vector<Expr> at = {i[0], i[1], ry->var, rx->var};
                                  if (xt.ndim() == 5) at.push_back(i[4]);
                                  return te::sum(in[0](at), {ry, rx});
                                },
                                "global_avg_pool2d.sum", "reduce");
         double inv = 1.0 / static_cast<double>(xt.shape[2] * xt.shape[3]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) { return s(as_exprs(i)) * ir::make_const(xt.dtype, inv); },
                            "global_avg_pool2d", "elemwise");
       }});
}

// ---------------------------------------------------------------- reductions, softmax

std::vector<int> reduce_axes(const TensorType& t, const Attrs& a) {
  std::vector<int64_t> axes = a.get_ints("axes");
  std::vector<int> r;
  if (axes.empty())
    for (int d = 0; d < t.ndim(); ++d) r.push_back(d);
  for (int64_t x : axes) r.push_back(normalize_axis(x, t.ndim()));
  std::sort(r.begin(), r.end());
  if (std::adjacent_find(r.begin(), r.end()) != r.end()) fail("an axis is reduced twice");
  return r;
}

TensorType infer_reduce(const std::vector<TensorType>& in, const Attrs& a) {
  std::vector<int> axes = reduce_axes(in[0], a);
  bool keep = a.get_int("keepdims", 1) != 0;
  TensorType out{in[0].dtype, {}};
  for (int d = 0; d < in[0].ndim(); ++d) {
    bool red = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!red) out.shape.push_back(in[0].shape[d]);
    else if (keep) out.shape.push_back(1);
  }
  return out;
}

// A float reduction of the last axis alone (a layer norm's mean, a softmax row's
// maximum and sum) runs as `kReduceLanes` partial results, a vector accumulated across
// the axis, and then their reduction: one scalar chain of dependent adds over a row of
// 768 floats in L2 took 0.06 ms per layer norm half in BERT-base, three times the
// vectors' time.
constexpr int kReduceLanes = 16;

bool vector_reducible(const TensorType& xt, const std::vector<int>& axes) {
  int last = xt.ndim() - 1;
  return xt.dtype.is_float() && axes.size() == 1 && axes[0] == last && xt.shape[last] >= 4 * kReduceLanes;
}

Expr combine(const std::string& kind, const Expr& v, const std::vector<ir::IterVar>& over, const Expr& where = Expr()) {
  if (kind == "min") return te::min_reduce(v, over, where);
  return kind == "max" ? te::max_reduce(v, over, where) : te::sum(v, over, where);
}

// x reduced (sum, mean's sum, max, min) over its last axis into `out_shape`: x's
// shape with the last axis kept as 1 or dropped.
Tensor reduce_last_axis(const Tensor& x, const std::vector<Expr>& out_shape, const std::string& kind, const std::string& name) {
  TensorType xt = type_of(x);
  int last = xt.ndim() - 1;
  std::vector<int64_t> pshape(xt.shape.begin(), xt.shape.end() - 1);
  pshape.push_back(kReduceLanes);
  // A row that the lanes do not divide (ViT's 197 tokens): the last vector's lanes past
  // the row keep the identity; `likely`, so loop partitioning leaves the test to the
  // last step alone.
  const int64_t len = xt.shape[last], steps = ceil_div(len, kReduceLanes);
  ir::IterVar rk = te::reduce_axis(static_cast<int>(steps), "rk");
  Tensor partial = te::compute(
      te_shape(TensorType{xt.dtype, pshape}),
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx(i.begin(), i.end() - 1);
        Expr at = rk->var * Expr(kReduceLanes) + i.back();
        idx.push_back(at);
        // The condition guards the load too (the reduction's step is an `if`).
        return combine(kind, x(idx), {rk}, len % kReduceLanes ? ir::likely(at < ir::make_int(len, at.dtype())) : Expr());
      },
      name + ".partial", "reduce");
  ir::IterVar rl = te::reduce_axis(kReduceLanes, "rl");
  return te::compute(
      out_shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx(i.begin(), i.begin() + last);
        idx.push_back(rl->var);
        return combine(kind, partial(idx), {rl});
      },
      name, "reduce");
}

Tensor compute_reduce(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out, const std::string& kind) {
  TensorType xt = type_of(in[0]);
  std::vector<int> axes = reduce_axes(xt, a);
  bool keep = a.get_int("keepdims", 1) != 0;
  std::vector<ir::IterVar> rv;
  int64_t count = 1;
  for (int d : axes) {
    rv.push_back(te::reduce_axis(static_cast<int>(xt.shape[d]), fmt::format("r{}", d)));
    count *= xt.shape[d];
  }
  if (vector_reducible(xt, axes)) {
    Tensor s = reduce_last_axis(in[0], te_shape(out), kind, kind == "mean" ? "mean.sum" : kind);
    if (kind != "mean") return s;
    return te::compute(te_shape(out),
                       [&](const std::vector<Var>& i) { return s(as_exprs(i)) * ir::make_const(xt.dtype, 1.0 / count); },
                       "mean", "elemwise");
  }
  auto body = [&](const std::vector<Var>& i) {
    std::vector<Expr> idx;
    size_t o = 0, r = 0;
    for (int d = 0; d < xt.ndim(); ++d) {
      if (r < axes.size() && axes[r] == d) {
        idx.push_back(rv[r++]->var);
        if (keep) o++;
      } else {
        idx.push_back(i[o++]);
      }
    }
    if (xt.shape.empty()) idx = {Expr(0)};
    return combine(kind, in[0](idx), rv);
  };
  Tensor s = te::compute(te_shape(out), body, kind == "mean" ? "mean.sum" : kind, "reduce");
  if (kind != "mean") return s;
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) { return s(as_exprs(i)) * ir::make_const(xt.dtype, 1.0 / count); }, "mean",
                     "elemwise");
}

void register_reduce() {
  for (std::string k : {"sum", "mean", "max", "min"})
    reg({k, OpPattern::CommReduce, 1, 0, infer_reduce,
         [k](const std::vector<Tensor>& in, const Attrs& a, const TensorType& o) { return compute_reduce(in, a, o, k); }});
  reg({"softmax", OpPattern::Opaque, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         normalize_axis(a.get_int("axis", -1), in[0].ndim());
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int axis = normalize_axis(a.get_int("axis", -1), out.ndim());
         if (out.shape.empty()) axis = 0;
         std::vector<Expr> shape = te_shape(out);
         ir::IterVar k1 = te::reduce_axis(shape[axis], "k"), k2 = te::reduce_axis(shape[axis], "k");
         auto with = [&](const std::vector<Var>& i, Expr v) {
           std::vector<Expr> idx = as_exprs(i);
           idx[axis] = v;
           return idx;
         };
         // The row's maximum and sum once per row (the axis kept with extent 1), not per element.
         std::vector<Expr> row = shape;
         row[axis] = Expr(1);
         bool vector = vector_reducible(out, {axis});
         Tensor mx = vector ? reduce_last_axis(in[0], row, "max", "softmax.max")
                            : te::compute(row, [&](const std::vector<Var>& i) { return te::max_reduce(in[0](with(i, k1->var)), {k1}); },
                                          "softmax.max", "reduce");
         Tensor e = te::compute(shape, [&](const std::vector<Var>& i) { return ir::exp(in[0](as_exprs(i)) - mx(with(i, Expr(0)))); },
                                "softmax.exp", "elemwise");
         Tensor s = vector ? reduce_last_axis(e, row, "sum", "softmax.sum")
                           : te::compute(row, [&](const std::vector<Var>& i) { return te::sum(e(with(i, k2->var)), {k2}); },
                                         "softmax.sum", "reduce");
         // The row's reciprocal once (hoisted out of the row's loop), then a product per
         // element instead of a division: BERT-base's [12, 128, 128] 0.13 -> 0.12 ms alone.
         Expr one = ir::make_const(out.dtype, 1.0);
         return te::compute(shape, [&](const std::vector<Var>& i) { return e(as_exprs(i)) * (one / s(with(i, Expr(0)))); }, "softmax",
                            "elemwise");
       }});
}

// ---------------------------------------------------------------- injective

void register_injective() {
  reg({"reshape", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         TensorType out{in[0].dtype, a.get_ints("shape")};
         for (int64_t d : out.shape)
           if (d < 0) fail(fmt::format("the target shape [{}] must be resolved and not negative", fmt::join(out.shape, ", ")));
         if (out.size() != in[0].size())
           fail(fmt::format("{} elements cannot be reshaped to [{}]", in[0].size(), fmt::join(out.shape, ", ")));
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) { return te::reshape(in[0], te_shape(out)); }});

  reg({"transpose", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         auto perm = a.get_ints("perm");
         if (static_cast<int>(perm.size()) != in[0].ndim()) fail("perm needs one entry per dimension");
         TensorType out{in[0].dtype, {}};
         std::vector<bool> seen(perm.size(), false);
         for (int64_t p : perm) {
           if (p < 0 || p >= in[0].ndim() || seen[p]) fail("perm is not a permutation");
           seen[p] = true;
           out.shape.push_back(in[0].shape[p]);
         }
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType&) {
         auto p = a.get_ints("perm");
         return te::transpose(in[0], std::vector<int>(p.begin(), p.end()));
       }});

  reg({"concatenate", OpPattern::Injective, -1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         if (in.empty()) fail("nothing to concatenate");
         if (in[0].ndim() == 0) fail("cannot concatenate scalars (rank 0)");
         int axis = normalize_axis(a.get_int("axis", 0), in[0].ndim());
         TensorType out = in[0];
         out.shape[axis] = 0;
         for (const auto& t : in) {
           if (t.dtype != in[0].dtype || t.ndim() != in[0].ndim()) fail("operands differ in type or rank");
           for (int d = 0; d < t.ndim(); ++d)
             if (d != axis && t.shape[d] != in[0].shape[d]) fail(fmt::format("operands differ in dimension {}", d));
           out.shape[axis] += t.shape[axis];
         }
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int axis = normalize_axis(a.get_int("axis", 0), out.ndim());
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              std::vector<Expr> offs;
                              int64_t off = 0;
                              for (const Tensor& t : in) {
                                offs.push_back(Expr(static_cast<int>(off)));
                                off += *ir::as_const_int(t->shape[axis]);
                              }
                              // The last operand by default; earlier ones where the index falls in them.
                              // `likely`: loop partitioning splits the loop that runs over the axis
                              // (or a fused loop that it divides) into one part per operand, each a
                              // plain copy of its operand.
                              Expr v;
                              for (size_t k = in.size(); k-- > 0;) {
                                std::vector<Expr> idx = as_exprs(i);
                                int64_t ext = *ir::as_const_int(in[k]->shape[axis]);
                                if (ext == 0) continue;  // an operand without elements adds nothing
                                idx[axis] = ir::min(ir::max(i[axis] - offs[k], 0), static_cast<int>(ext - 1));
                                Expr x = in[k](idx);
                                v = !v.defined() ? x : ir::select(ir::likely(i[axis] < offs[k] + static_cast<int>(ext)), x, v);
                              }
                              return v;
                            },
                            "concatenate", "injective");
       }});

  reg({"strided_slice", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         auto b = a.get_ints("begin"), e = a.get_ints("end"), s = a.get_ints("steps");
         int n = in[0].ndim();
         if (static_cast<int>(b.size()) != n || static_cast<int>(e.size()) != n || static_cast<int>(s.size()) != n)
           fail("begin, end and steps need one entry per dimension");
         TensorType out{in[0].dtype, {}};
         for (int d = 0; d < n; ++d) {
           if (s[d] == 0) fail("a step is zero");
           int64_t len = s[d] > 0 ? (e[d] - b[d] + s[d] - 1) / s[d] : (b[d] - e[d] - s[d] - 1) / -s[d];
           if (len <= 0) {  // an empty slice: the tensor has no elements
             out.shape.push_back(0);
             continue;
           }
           if (b[d] < 0 || b[d] >= in[0].shape[d] || b[d] + (len - 1) * s[d] < 0 || b[d] + (len - 1) * s[d] >= in[0].shape[d])
             fail(fmt::format("the slice of dimension {} leaves the tensor", d));
           out.shape.push_back(len);
         }
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         auto b = a.get_ints("begin"), s = a.get_ints("steps");
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              std::vector<Expr> idx;
                              for (size_t d = 0; d < b.size(); ++d)
                                idx.push_back(Expr(static_cast<int>(b[d])) + i[d] * static_cast<int>(s[d]));
                              if (b.empty()) idx = {Expr(0)};
                              return in[0](idx);
                            },
                            "strided_slice", "injective");
       }});

  reg({"take", OpPattern::Injective, 2, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         if (in[0].ndim() == 0) fail("cannot take from a scalar (rank 0)");
         int axis = normalize_axis(a.get_int("axis", 0), in[0].ndim());
         if (!in[1].dtype.is_integer()) fail("indices must be integers");
         TensorType out{in[0].dtype, {}};
         for (int d = 0; d < axis; ++d) out.shape.push_back(in[0].shape[d]);
         for (int64_t d : in[1].shape) out.shape.push_back(d);
         for (int d = axis + 1; d < in[0].ndim(); ++d) out.shape.push_back(in[0].shape[d]);
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         TensorType xt = type_of(in[0]);
         int axis = normalize_axis(a.get_int("axis", 0), xt.ndim());
         // The indices' rank from the output's: a rank-0 index (Gather's scalar, which
         // drops the axis) is a te tensor of shape [1], so its own te shape cannot say.
         int ir_ = out.ndim() - (xt.ndim() - 1);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              std::vector<Expr> iidx;
                              for (int d = 0; d < ir_; ++d) iidx.push_back(i[axis + d]);
                              if (iidx.empty()) iidx = {Expr(0)};
                              Expr k = ir::cast(DataType::Int(32), in[1](iidx));
                              int dim = static_cast<int>(xt.shape[axis]);
                              k = ir::min(ir::max(ir::select(k < 0, k + dim, k), 0), dim - 1);
                              std::vector<Expr> idx;
                              for (int d = 0; d < axis; ++d) idx.push_back(i[d]);
                              idx.push_back(k);
                              for (int d = axis + 1; d < xt.ndim(); ++d) idx.push_back(i[d - 1 + ir_]);
                              return in[0](idx);
                            },
                            "take", "injective");
       }});

  reg({"pad", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         auto p = a.get_ints("pads");
         if (static_cast<int>(p.size()) != 2 * in[0].ndim()) fail("pads needs a before and an after amount per dimension");
         TensorType out = in[0];
         for (int d = 0; d < in[0].ndim(); ++d) {
           if (p[d] < 0 || p[d + in[0].ndim()] < 0) fail("negative pads are not supported");
           // Sizes beyond 2^31 are refused here, before the sum can overflow.
           constexpr int64_t kMax = int64_t{1} << 31;
           if (p[d] > kMax || p[d + in[0].ndim()] > kMax || out.shape[d] > kMax)
             fail(fmt::format("padding dimension {} to more than 2^31 elements is not supported", d));
           out.shape[d] += p[d] + p[d + in[0].ndim()];
         }
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         auto p = a.get_ints("pads");
         size_t n = p.size() / 2;
         std::vector<Expr> before, after;
         for (size_t d = 0; d < n; ++d) {
           before.push_back(Expr(static_cast<int>(p[d])));
           after.push_back(Expr(static_cast<int>(p[d + n])));
         }
         if (n == 0) before = after = {Expr(0)};
         Expr value = ir::make_const(out.dtype, a.get_float("value", 0));
         // Padding an empty tensor: every element is padding (there is nothing to read).
         if (type_of(in[0]).size() == 0)
           return te::compute(te_shape(out), [&](const std::vector<Var>&) { return value; }, "pad", "injective");
         return te::pad(in[0], before, after, ir::make_const(out.dtype, a.get_float("value", 0)), "pad");
       }});
}

void register_all() {
  register_elementwise();
  register_broadcast();
  register_nn();
  register_reduce();
  register_injective();
  register_packed_ops(reg);
  register_quant_ops(reg);
  register_math_ops();
  register_tensor_ops();
  register_image_ops();
  register_int8_ops();
  register_index_ops();
  register_window_ops();
  register_winograd_ops();
}

const std::map<std::string, OpDef>& ops() {
  static const bool once = (register_all(), true);
  (void)once;
  return registry();
}

}  // namespace

namespace detail {
void reg_unary_op(const std::string& name, std::function<Expr(Expr, const Attrs&)> f) { reg_unary(name, std::move(f)); }
void reg_binary_op(const std::string& name, std::function<Expr(Expr, Expr)> f, bool to_bool) { reg_binary(name, std::move(f), to_bool); }
}  // namespace detail

const OpDef& op_def(const std::string& name) {
  auto it = ops().find(name);
  if (it == ops().end()) throw CompileError("unknown graph operator '" + name + "'");
  return it->second;
}

bool is_known_op(const std::string& name) { return ops().count(name) != 0; }

bool is_pointwise_binary(const std::string& op) {
  static const std::set<std::string> binary = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"};
  return binary.count(op) != 0;
}

bool is_pooling2d(const std::string& op) { return op == "max_pool2d" || op == "avg_pool2d" || op == "global_avg_pool2d"; }

void register_op(OpDef def) {
  if (def.name.empty() || !def.infer || !def.compute) throw CompileError("register_op: an operator needs a name, infer and compute");
  if (ops().count(def.name)) throw CompileError("register_op: operator '" + def.name + "' is already defined");
  reg(std::move(def));
}

std::vector<std::string> op_names() {
  std::vector<std::string> r;
  for (const auto& [k, v] : ops()) r.push_back(k);
  return r;
}

}  // namespace kiln::graph
