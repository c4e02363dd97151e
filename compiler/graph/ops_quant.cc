// Quantization operators.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | quantize_linear | x float32, scale float32 (scalar or [C]), zero_point int8/uint8 (same shape as scale, optional: uint8 0) | axis (per-axis scales) | elemwise |
// | dequantize_linear | q int8/uint8/int32, scale, zero_point (optional: 0) | axis | elemwise |
// | right_shift left_shift | a, b signed integers | - | broadcast |
// | round | x float | - | elemwise (half to even) |
//
// quantize_linear is y = saturate(round_half_even(x / scale) + zero_point) and
// dequantize_linear is (q - zero_point) * scale, as ONNX's QuantizeLinear and
// DequantizeLinear define them.
#include "compiler/graph/ops_quant.h"

#include <fmt/format.h>

#include "compiler/ir/analyzer.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"
#include "compiler/te/ops.h"

namespace kiln::graph {

using ir::Expr;
using ir::Var;
using te::Tensor;

namespace {

[[noreturn]] void fail(const std::string& msg) { throw CompileError(msg); }

std::vector<Expr> exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

DataType parse_int_dtype(const std::string& s) {
  if (s == "int32") return DataType::Int(32);
  if (s == "int64") return DataType::Int(64);
  if (s == "int16") return DataType::Int(16);
  fail("out_dtype '" + s + "' is not an accumulation type (int16, int32 or int64)");
}

// The axis that per-axis scales run along, or -1 for per-tensor parameters; checks the
// scale and zero point shapes against x.
int param_axis(const std::vector<TensorType>& in, const Attrs& a) {
  const TensorType& x = in[0];
  const TensorType& s = in[1];
  if (!s.dtype.is_float()) fail("the scale must be a float tensor, not " + s.dtype.to_string());
  if (in.size() > 2 && in[2].shape != s.shape)
    fail(fmt::format("the zero point has shape [{}], the scale [{}]", fmt::join(in[2].shape, ", "), fmt::join(s.shape, ", ")));
  if (s.size() == 1 && s.ndim() <= 1) return -1;
  if (s.ndim() != 1) fail(fmt::format("the scale must be a scalar or 1-d, not [{}]", fmt::join(s.shape, ", ")));
  int64_t axis = a.get_int("axis", 1);
  if (axis < 0) axis += x.ndim();
  if (axis < 0 || axis >= x.ndim()) fail(fmt::format("axis {} is out of range for rank {}", a.get_int("axis", 1), x.ndim()));
  if (x.shape[axis] != s.shape[0])
    fail(fmt::format("{} scales for {} elements along axis {}", s.shape[0], x.shape[axis], axis));
  return static_cast<int>(axis);
}

// Element `i` of a per-tensor (axis -1) or per-axis parameter.
Expr param_at(const Tensor& p, int axis, const std::vector<Var>& i) { return axis < 0 ? p(Expr(0)) : p(Expr(i[axis])); }

TensorType infer_quantize(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[0].dtype != DataType::Float(32)) fail("quantize_linear takes float32 data, not " + in[0].dtype.to_string());
  param_axis(in, a);
  DataType q = in.size() > 2 ? in[2].dtype : DataType::UInt(8);
  if (q != DataType::Int(8) && q != DataType::UInt(8)) fail("the zero point must be int8 or uint8, not " + q.to_string());
  return TensorType{q, in[0].shape};
}

Tensor compute_quantize(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out,
                        const std::vector<TensorType>& types) {
  int axis = param_axis(types, a);
  DataType f = DataType::Float(32);
  double lo = out.dtype.is_int() ? -128 : 0, hi = out.dtype.is_int() ? 127 : 255;
  return te::compute(in[0]->shape,
                     [&](const std::vector<Var>& i) {
                       Expr v = ir::round(in[0](exprs(i)) / param_at(in[1], axis, i));
                       if (in.size() > 2) v = v + ir::cast(f, param_at(in[2], axis, i));
                       v = ir::min(ir::max(v, ir::make_const(f, lo)), ir::make_const(f, hi));
                       return ir::cast(out.dtype, v);
                     },
                     "quantize_linear", "elemwise");
}

TensorType infer_dequantize(const std::vector<TensorType>& in, const Attrs& a) {
  DataType q = in[0].dtype;
  if (q != DataType::Int(8) && q != DataType::UInt(8) && q != DataType::Int(32))
    fail("dequantize_linear takes int8, uint8 or int32 data, not " + q.to_string());
  if (in.size() > 2 && in[2].dtype != q)
    fail(fmt::format("the zero point is {}, the data {}", in[2].dtype.to_string(), q.to_string()));
  param_axis(in, a);
  return TensorType{in[1].dtype, in[0].shape};
}

Tensor compute_dequantize(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out,
                          const std::vector<TensorType>& types) {
  int axis = param_axis(types, a);
  DataType i32 = DataType::Int(32);
  return te::compute(in[0]->shape,
                     [&](const std::vector<Var>& i) {
                       Expr v = ir::cast(i32, in[0](exprs(i)));
                       if (in.size() > 2) v = v - ir::cast(i32, param_at(in[2], axis, i));
                       return ir::cast(out.dtype, v) * param_at(in[1], axis, i);
                     },
                     "dequantize_linear", "elemwise");
}

// The graph type of a te tensor (its shape is constant).
TensorType type_of(const Tensor& t) {
  TensorType r{t->dtype, {}};
  for (const Expr& e : t->shape) r.shape.push_back(*ir::as_const_int(ir::simplify(e)));
  return r;
}

// A quantization op's compute sees the graph types of its inputs again (rank-0
// parameters are te tensors of shape [1]).
std::vector<TensorType> param_types(const std::vector<Tensor>& in, const TensorType& out) {
  std::vector<TensorType> t;
  for (const Tensor& x : in) t.push_back(type_of(x));
  t[0].shape = out.shape;
  return t;
}

std::vector<int64_t> broadcast(const TensorType& a, const TensorType& b) {
  size_t n = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> out(n, 1);
  for (const TensorType* t : {&a, &b}) {
    size_t off = n - t->shape.size();
    for (size_t d = 0; d < t->shape.size(); ++d) {
      int64_t x = t->shape[d];
      if (x == 1 || x == out[off + d]) continue;
      if (out[off + d] != 1) fail(fmt::format("shapes {} and {} do not broadcast", a.to_string(), b.to_string()));
      out[off + d] = x;
    }
  }
  return out;
}

Expr at_broadcast(const Tensor& t, const TensorType& tt, const std::vector<Var>& idx) {
  if (tt.shape.empty()) return t(Expr(0));
  std::vector<Expr> e;
  size_t off = idx.size() - tt.shape.size();
  for (size_t d = 0; d < tt.shape.size(); ++d) e.push_back(tt.shape[d] == 1 ? Expr(0) : Expr(idx[off + d]));
  return t(e);
}

void reg_shift(const std::function<void(OpDef)>& reg, const std::string& name, bool right) {
  reg({name, OpPattern::Broadcast, 2, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         if (!in[0].dtype.is_int() || in[0].dtype != in[1].dtype)
           fail(fmt::format("shifts take two signed integers of one type, not {} and {}", in[0].dtype.to_string(),
                            in[1].dtype.to_string()));
         return TensorType{in[0].dtype, broadcast(in[0], in[1])};
       },
       [right, name](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType a = type_of(in[0]), b = type_of(in[1]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              Expr x = at_broadcast(in[0], a, i), s = at_broadcast(in[1], b, i);
                              return right ? ir::shift_right(x, s) : ir::shift_left(x, s);
                            },
                            name, "broadcast");
       }});
}

}  // namespace

bool has_out_dtype(const Attrs& a) { return a.has("out_dtype"); }

DataType out_dtype(const Attrs& a) { return parse_int_dtype(a.get_string("out_dtype")); }

DataType accumulation_type(const TensorType& a, const TensorType& b, const Attrs& attrs) {
  if (!has_out_dtype(attrs)) {
    if (a.dtype != b.dtype) fail(fmt::format("operand types differ ({} and {})", a.dtype.to_string(), b.dtype.to_string()));
    return a.dtype;
  }
  DataType acc = out_dtype(attrs);
  for (const TensorType* t : {&a, &b})
    if (!t->dtype.is_integer() || t->dtype.bits() > acc.bits())
      fail(fmt::format("out_dtype={} accumulates integer operands no wider than it, not {}", acc.to_string(),
                       t->dtype.to_string()));
  return acc;
}

void register_quant_ops(const std::function<void(OpDef)>& reg) {
  reg({"quantize_linear", OpPattern::ElemWise, 2, 3, infer_quantize,
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         return compute_quantize(in, a, out, param_types(in, out));
       }});
  reg({"dequantize_linear", OpPattern::ElemWise, 2, 3, infer_dequantize,
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         return compute_dequantize(in, a, out, param_types(in, out));
       }});
  reg_shift(reg, "right_shift", true);
  reg_shift(reg, "left_shift", false);
  reg({"round", OpPattern::ElemWise, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         if (!in[0].dtype.is_float()) fail("round takes float data, not " + in[0].dtype.to_string());
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType&) {
         return te::compute(in[0]->shape, [&](const std::vector<Var>& i) { return ir::round(in[0](exprs(i))); }, "round",
                            "elemwise");
       }});
}

}  // namespace kiln::graph
