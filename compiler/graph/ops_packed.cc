// Operators in the packed layouts of an accelerator with a GEMM core (graph_pack's
// output, backend-vta/strategy.h): activations [N/b, C/c, H, W, b, c], weights
// [O/bo, C/bi, KH, KW, bo, bi], biases [1, O/bo, 1, 1, b, bo]. Their computes define the
// semantics on any target, so a placed graph also runs on the CPU bit for bit; an
// accelerator's strategy builds its own program for the nodes marked for it.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | layout_pack | x [N,C,H,W] | batch_block, channel_block | injective |
// | layout_unpack | x [N/b,C/c,H,W,b,c] | - | injective |
// | layout_pack_weight | w [O,C,KH,KW] | out_block, in_block | injective |
// | layout_pack_bias | bias [1,O,1,1] | batch_block, out_block | injective |
// | conv2d_packed | data int8, weight int8, bias int32 (packed) | strides, pads [t,l,b,r], shift, relu | opaque |
// | add_packed | a int8, b int8 (packed), identity int8 [bo,bi] | shift_a, shift_b, round, shift, relu | opaque |
// | max_pool2d_packed | x int8 (packed), identity int8 [bo,bi] | kernel, strides, pads [t,l,b,r] | opaque |
//
// conv2d_packed: out = clip((sum data*weight + bias) >> shift, relu ? 0 : -128, 127).
// add_packed: out = clip(((a >> shift_a) + (b >> shift_b) + round) >> shift, ...), a
// negative shift shifting left; `identity` is the BLOCK_OUT x BLOCK_IN identity block
// through which an accelerator whose ALU reads only accumulators widens its operands.
// max_pool2d_packed: the maximum over each window, the padding counting as 0 (what an
// accelerator's zero-padding load gives; placement uses it only where that equals
// max_pool2d's padding, which never wins: unpadded windows or non-negative data).
#include <fmt/format.h>

#include "compiler/graph/op.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"
#include "compiler/te/ops.h"

namespace kiln::graph {

namespace {

using ir::Expr;
using ir::Var;
using te::Tensor;

[[noreturn]] void fail(const std::string& msg) { throw CompileError(msg); }

int64_t positive(const Attrs& a, const char* key) {
  int64_t v = a.get_int(key, 0);
  if (v <= 0) fail(fmt::format("attribute {} must be positive, is {}", key, v));
  return v;
}

int64_t divide(int64_t n, int64_t block, const char* what) {
  if (n % block != 0) fail(fmt::format("{} ({}) is not a multiple of the block ({})", what, n, block));
  return n / block;
}

Expr i32(int64_t v) { return ir::make_const(ir::DataType::Int(32), static_cast<double>(v)); }

// x >> s for s > 0, x << -s for s < 0.
Expr shift_by(Expr x, int64_t s) {
  if (s > 0) return ir::shift_right(x, i32(s));
  if (s < 0) return ir::shift_left(x, i32(-s));
  return x;
}

Expr requant(Expr acc, const Attrs& a) {
  acc = shift_by(acc, a.get_int("shift", 0));
  acc = ir::min(acc, i32(127));
  acc = ir::max(acc, i32(a.get_int("relu", 0) ? 0 : -128));
  return ir::cast(ir::DataType::Int(8), acc);
}

void require_rank(const TensorType& t, int rank, const char* what) {
  if (t.ndim() != rank) fail(fmt::format("{} must have rank {}, has {}", what, rank, t.to_string()));
}

void require_dtype(const TensorType& t, ir::DataType d, const char* what) {
  if (t.dtype != d) fail(fmt::format("{} must be {}, is {}", what, d.to_string(), t.to_string()));
}

// Packed data with zero rows and columns around its image ([t, l, b, r]), or itself.
Tensor pad_spatial(const Tensor& data, const std::vector<int64_t>& p) {
  if (!p[0] && !p[1] && !p[2] && !p[3]) return data;
  return te::pad(data, {0, 0, static_cast<int>(p[0]), static_cast<int>(p[1]), 0, 0},
                 {0, 0, static_cast<int>(p[2]), static_cast<int>(p[3]), 0, 0}, Expr(), "pad");
}

TensorType infer_conv2d_packed(const std::vector<TensorType>& in, const Attrs& a) {
  const TensorType &x = in[0], &w = in[1], &b = in[2];
  require_rank(x, 6, "data");
  require_rank(w, 6, "weight");
  require_rank(b, 6, "bias");
  require_dtype(x, ir::DataType::Int(8), "data");
  require_dtype(w, ir::DataType::Int(8), "weight");
  require_dtype(b, ir::DataType::Int(32), "bias");
  if (w.shape[1] != x.shape[1] || w.shape[5] != x.shape[5])
    fail(fmt::format("weight {} does not match data {}", w.to_string(), x.to_string()));
  if (b.shape[1] != w.shape[0] || b.shape[4] != x.shape[4] || b.shape[5] != w.shape[4])
    fail(fmt::format("bias {} does not match weight {}", b.to_string(), w.to_string()));
  auto s = a.get_ints("strides", {1, 1});
  auto p = a.get_ints("pads", {0, 0, 0, 0});
  if (s.size() != 2 || p.size() != 4 || s[0] <= 0 || s[1] <= 0) fail("conv2d_packed takes 2 positive strides and 4 pads");
  int64_t oh = (x.shape[2] + p[0] + p[2] - w.shape[2]) / s[0] + 1;
  int64_t ow = (x.shape[3] + p[1] + p[3] - w.shape[3]) / s[1] + 1;
  if (oh <= 0 || ow <= 0) fail("the kernel is larger than the padded input");
  return TensorType{ir::DataType::Int(8), {x.shape[0], w.shape[0], oh, ow, x.shape[4], w.shape[4]}};
}

Tensor compute_conv2d_packed(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  auto s = a.get_ints("strides", {1, 1});
  auto p = a.get_ints("pads", {0, 0, 0, 0});
  Tensor data = pad_spatial(in[0], p);
  const Tensor& w = in[1];
  const Tensor& bias = in[2];
  auto ext = [&](const Tensor& t, int d) { return static_cast<int>(*ir::as_const_int(t->shape[d])); };
  ir::IterVar rc = te::reduce_axis(ext(w, 1), "rc");
  ir::IterVar ry = te::reduce_axis(ext(w, 2), "ry");
  ir::IterVar rx = te::reduce_axis(ext(w, 3), "rx");
  ir::IterVar ri = te::reduce_axis(ext(w, 5), "ri");
  ir::DataType acc = ir::DataType::Int(32);
  Tensor conv = te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr y = i[2] * static_cast<int>(s[0]) + ry->var;
        Expr x = i[3] * static_cast<int>(s[1]) + rx->var;
        return te::sum(ir::cast(acc, data(i[0], rc->var, y, x, i[4], ri->var)) *
                           ir::cast(acc, w(i[1], rc->var, ry->var, rx->var, i[5], ri->var)),
                       {rc, ry, rx, ri});
      },
      "conv2d_packed.acc", "conv2d");
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        return requant(conv(i[0], i[1], i[2], i[3], i[4], i[5]) + bias(Expr(0), i[1], Expr(0), Expr(0), i[4], i[5]), a);
      },
      "conv2d_packed", "elemwise");
}

TensorType infer_add_packed(const std::vector<TensorType>& in, const Attrs&) {
  require_rank(in[0], 6, "a");
  require_dtype(in[0], ir::DataType::Int(8), "a");
  if (in[1] != in[0]) fail(fmt::format("operands differ: {} and {}", in[0].to_string(), in[1].to_string()));
  require_rank(in[2], 2, "identity");
  return in[0];
}

Tensor compute_add_packed(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  int64_t round = a.get_int("round", 0);
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx(i.begin(), i.end());
        Expr x = shift_by(ir::cast(ir::DataType::Int(32), in[0](idx)), a.get_int("shift_a", 0));
        Expr y = shift_by(ir::cast(ir::DataType::Int(32), in[1](idx)), a.get_int("shift_b", 0));
        Expr sum = x + y;
        if (round) sum = sum + i32(round);
        return requant(sum, a);
      },
      "add_packed", "elemwise");
}

TensorType infer_max_pool2d_packed(const std::vector<TensorType>& in, const Attrs& a) {
  require_rank(in[0], 6, "data");
  require_dtype(in[0], ir::DataType::Int(8), "data");
  require_rank(in[1], 2, "identity");
  auto k = a.get_ints("kernel", {});
  auto s = a.get_ints("strides", {1, 1});
  auto p = a.get_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || p.size() != 4 || k[0] <= 0 || k[1] <= 0 || s[0] <= 0 || s[1] <= 0)
    fail("max_pool2d_packed takes 2 positive kernel sizes, 2 positive strides and 4 pads");
  for (int64_t v : p)
    if (v < 0) fail("max_pool2d_packed's pads must not be negative");
  const auto& x = in[0].shape;
  int64_t oh = (x[2] + p[0] + p[2] - k[0]) / s[0] + 1;
  int64_t ow = (x[3] + p[1] + p[3] - k[1]) / s[1] + 1;
  if (oh <= 0 || ow <= 0) fail("the window is larger than the padded input");
  return TensorType{in[0].dtype, {x[0], x[1], oh, ow, x[4], x[5]}};
}

Tensor compute_max_pool2d_packed(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  auto k = a.get_ints("kernel");
  auto s = a.get_ints("strides", {1, 1});
  auto p = a.get_ints("pads", {0, 0, 0, 0});
  Tensor data = pad_spatial(in[0], p);
  ir::IterVar ry = te::reduce_axis(static_cast<int>(k[0]), "ry"), rx = te::reduce_axis(static_cast<int>(k[1]), "rx");
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr y = i[2] * static_cast<int>(s[0]) + ry->var;
        Expr x = i[3] * static_cast<int>(s[1]) + rx->var;
        return te::max_reduce(data(i[0], i[1], y, x, i[4], i[5]), {ry, rx});
      },
      "max_pool2d_packed", "pool");
}

}  // namespace

void register_packed_ops(const std::function<void(OpDef)>& reg) {
  reg({"layout_pack", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         require_rank(in[0], 4, "layout_pack's input");
         int64_t b = positive(a, "batch_block"), c = positive(a, "channel_block");
         const auto& s = in[0].shape;
         return TensorType{in[0].dtype, {divide(s[0], b, "the batch"), divide(s[1], c, "the channels"), s[2], s[3], b, c}};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int b = static_cast<int>(a.get_int("batch_block")), c = static_cast<int>(a.get_int("channel_block"));
         return te::compute(
             te_shape(out), [&](const std::vector<Var>& i) { return in[0](i[0] * b + i[4], i[1] * c + i[5], i[2], i[3]); },
             "layout_pack", "injective");
       }});
  reg({"layout_unpack", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         require_rank(in[0], 6, "layout_unpack's input");
         const auto& s = in[0].shape;
         return TensorType{in[0].dtype, {s[0] * s[4], s[1] * s[5], s[2], s[3]}};
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         int b = static_cast<int>(*ir::as_const_int(in[0]->shape[4]));
         int c = static_cast<int>(*ir::as_const_int(in[0]->shape[5]));
         return te::compute(
             te_shape(out),
             [&](const std::vector<Var>& i) { return in[0](i[0] / b, i[1] / c, i[2], i[3], i[0] % b, i[1] % c); },
             "layout_unpack", "injective");
       }});
  reg({"layout_pack_weight", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         require_rank(in[0], 4, "layout_pack_weight's input");
         int64_t bo = positive(a, "out_block"), bi = positive(a, "in_block");
         const auto& s = in[0].shape;
         return TensorType{in[0].dtype,
                           {divide(s[0], bo, "the output channels"), divide(s[1], bi, "the input channels"), s[2], s[3], bo, bi}};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int bo = static_cast<int>(a.get_int("out_block")), bi = static_cast<int>(a.get_int("in_block"));
         return te::compute(
             te_shape(out), [&](const std::vector<Var>& i) { return in[0](i[0] * bo + i[4], i[1] * bi + i[5], i[2], i[3]); },
             "layout_pack_weight", "injective");
       }});
  reg({"layout_pack_bias", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         require_rank(in[0], 4, "layout_pack_bias's input");
         int64_t b = positive(a, "batch_block"), bo = positive(a, "out_block");
         return TensorType{in[0].dtype, {1, divide(in[0].shape[1], bo, "the output channels"), 1, 1, b, bo}};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int bo = static_cast<int>(a.get_int("out_block"));
         return te::compute(
             te_shape(out), [&](const std::vector<Var>& i) { return in[0](Expr(0), i[1] * bo + i[5], Expr(0), Expr(0)); },
             "layout_pack_bias", "injective");
       }});
  reg({"conv2d_packed", OpPattern::Opaque, 3, 0, infer_conv2d_packed, compute_conv2d_packed});
  reg({"add_packed", OpPattern::Opaque, 3, 0, infer_add_packed, compute_add_packed});
  reg({"max_pool2d_packed", OpPattern::Opaque, 2, 0, infer_max_pool2d_packed, compute_max_pool2d_packed});
}

}  // namespace kiln::graph
