// Integer convolutions and dense layers in the layout of a CPU dot-product instruction
// (x86 VNNI's vpdpbusd: per int32 lane, 4 unsigned bytes times 4 signed bytes,
// summed), which AlterLayoutInt8 chooses for int8 conv2d/dense/matmul with constant
// weights on the host.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | pack_int8_weight | w int8: OIHW (conv), [N, K] (dense) or [K, N] (dense_t) | layout | injective |
// | int8_weight_offset | w int8 | axis (the output axis) | comm_reduce |
// | conv2d_nchwc_int8 | data int8/uint8 NCHW, words [O/16, C/4, KH, KW, 16], offset [O] (int8 data only) | strides, pads, dilations, channels | out_elemwise_fusable |
// | dense_int8 | data int8/uint8 [M, K], words [N/16, K/4, 16], offset [N] (int8 data only) | units | out_elemwise_fusable |
//
// A word holds 4 consecutive input channels (channel 4c + j in byte j); channels and
// outputs past the end are zero, so the blocks are rounded up. The instruction takes
// unsigned data: int8 data is offset by 128, and since sum (x + 128) w = sum x w +
// 128 sum w, the convolution subtracts `offset` = 128 sum w per output channel, which
// int8_weight_offset computes and FoldConstant folds with the packing. Padding pads x
// with 0, which is the byte 128 after the offset. The results are exact: int32 sums.
#include <fmt/format.h>

#include "compiler/graph/op_util.h"
#include "compiler/ir/op.h"
#include "compiler/te/ops.h"
#include "support/integer.h"

namespace kiln::graph::detail {

using ir::DataType;
using ir::Expr;
using ir::Var;
using te::Tensor;

namespace {

constexpr int64_t kLanes = 16;  // int32 outputs per word vector (one zmm register)
constexpr int64_t kBytes = 4;   // input channels per word

Expr i32(int64_t v) { return Expr(static_cast<int>(v)); }

bool is_byte(DataType t) { return t == DataType::Int(8) || t == DataType::UInt(8); }

// The intrinsic dot_u8s8x4(a, b) of the interpreter and the CPU backend: per int32 lane,
// sum over bytes j of uint8(a >> 8j) * int8(b >> 8j) (vpdpbusd without its accumulator).
Expr dot_u8s8x4(Expr a, Expr b) { return ir::make_call(DataType::Int(32), "dot_u8s8x4", {std::move(a), std::move(b)}); }

// Packs 4 bytes (int32 values in [0, 255]) into one word, byte j of `byte(j)`.
Expr word(const std::function<Expr(int)>& byte) {
  Expr w = byte(0);
  for (int j = 1; j < kBytes; ++j) w = ir::bitwise_or(w, ir::shift_left(byte(j), i32(8 * j)));
  return w;
}

// The unsigned byte the instruction reads for a data value: x + 128 for int8 data.
Expr data_byte(Expr x, bool is_signed) {
  Expr v = ir::cast(DataType::Int(32), std::move(x));
  return is_signed ? v + i32(128) : v;
}

// ---------------------------------------------------------------- weights

std::string layout_of(const Attrs& a) {
  std::string l = a.get_string("layout", "conv");
  if (l != "conv" && l != "dense" && l != "dense_t") fail("layout must be conv, dense or dense_t, not '" + l + "'");
  return l;
}

TensorType infer_pack(const std::vector<TensorType>& in, const Attrs& a) {
  const TensorType& w = in[0];
  if (w.dtype != DataType::Int(8)) fail("pack_int8_weight packs int8 weights, not " + w.dtype.to_string());
  std::string l = layout_of(a);
  if (w.ndim() != (l == "conv" ? 4 : 2)) fail(fmt::format("a {} weight cannot have shape {}", l, w.to_string()));
  const auto& s = w.shape;
  if (l == "conv") return TensorType{DataType::Int(32), {ceil_div(s[0], kLanes), ceil_div(s[1], kBytes), s[2], s[3], kLanes}};
  int64_t n = l == "dense" ? s[0] : s[1], k = l == "dense" ? s[1] : s[0];
  return TensorType{DataType::Int(32), {ceil_div(n, kLanes), ceil_div(k, kBytes), kLanes}};
}

Tensor compute_pack(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType wt = type_of(in[0]);
  std::string l = layout_of(a);
  const Tensor& w = in[0];
  int64_t o_ext = l == "dense_t" ? wt.shape[1] : wt.shape[0];
  int64_t c_ext = l == "dense_t" ? wt.shape[0] : wt.shape[1];
  // Bounds checks only where the blocks overhang (FoldConstant runs this in the
  // interpreter: ResNet-18 has 11 M weights).
  bool pad_o = o_ext % kLanes != 0, pad_c = c_ext % kBytes != 0;
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr o = i[0] * i32(kLanes) + i.back();
        return word([&](int j) {
          Expr c = i[1] * i32(kBytes) + i32(j);
          Expr oc = pad_o ? ir::min(o, i32(o_ext - 1)) : o, cc = pad_c ? ir::min(c, i32(c_ext - 1)) : c;
          Expr v = l == "conv" ? w(oc, cc, i[2], i[3]) : l == "dense" ? w(oc, cc) : w(cc, oc);
          Expr byte = ir::bitwise_and(ir::cast(DataType::Int(32), v), i32(255));
          if (!pad_o && !pad_c) return byte;
          Expr inside = pad_o && pad_c ? (o < i32(o_ext) && c < i32(c_ext)) : pad_o ? o < i32(o_ext) : c < i32(c_ext);
          return ir::select(inside, byte, i32(0));
        });
      },
      "pack_int8_weight", "injective");
}

TensorType infer_offset(const std::vector<TensorType>& in, const Attrs& a) {
  if (in[0].dtype != DataType::Int(8)) fail("int8_weight_offset takes int8 weights, not " + in[0].dtype.to_string());
  if (in[0].ndim() == 0) fail("int8_weight_offset needs a rank of at least 1");
  int axis = normalize_axis(a.get_int("axis", 0), in[0].ndim());
  return TensorType{DataType::Int(32), {in[0].shape[axis]}};
}

// 128 * (the sum of the weights of each output), in int32.
Tensor compute_offset(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType wt = type_of(in[0]);
  int axis = normalize_axis(a.get_int("axis", 0), wt.ndim());
  std::vector<ir::IterVar> r;
  for (int d = 0; d < wt.ndim(); ++d)
    if (d != axis) r.push_back(te::reduce_axis(i32(wt.shape[d]), fmt::format("r{}", d)));
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx;
        size_t k = 0;
        for (int d = 0; d < wt.ndim(); ++d) idx.push_back(d == axis ? Expr(i[0]) : Expr(r[k++]->var));
        return te::sum(ir::cast(DataType::Int(32), in[0](idx)) * i32(128), r);
      },
      "int8_weight_offset", "comm_reduce");
}

// ---------------------------------------------------------------- conv2d

// The inputs' shared checks: data bytes, int32 words, the offset iff the data is signed.
void check_operands(const std::vector<TensorType>& in, int64_t outputs, const char* op) {
  if (!is_byte(in[0].dtype)) fail(fmt::format("{} takes int8 or uint8 data, not {}", op, in[0].dtype.to_string()));
  if (in[1].dtype != DataType::Int(32)) fail(fmt::format("{} takes int32 weight words, not {}", op, in[1].dtype.to_string()));
  bool is_signed = in[0].dtype == DataType::Int(8);
  if (is_signed != (in.size() == 3))
    fail(fmt::format("{}: int8 data needs the weight offset input, uint8 data none", op));
  if (is_signed && (in[2].dtype != DataType::Int(32) || in[2].shape != std::vector<int64_t>{outputs}))
    fail(fmt::format("{}: the offset must be int32[{}], is {}", op, outputs, in[2].to_string()));
}

TensorType infer_conv(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  int64_t o = a.get_int("channels", 0);
  if (x.size() != 4 || w.size() != 5 || w[4] != kLanes) fail("conv2d_nchwc_int8 takes NCHW data and [O/16, C/4, KH, KW, 16] words");
  if (o <= 0 || ceil_div(o, kLanes) != w[0]) fail(fmt::format("{} output channels do not fill {} blocks of 16", o, w[0]));
  if (ceil_div(x[1], kBytes) != w[1]) fail(fmt::format("the words hold {} input channels, the data has {}", w[1] * kBytes, x[1]));
  check_operands(in, o, "conv2d_nchwc_int8");
  Window win = window(a, {w[2], w[3]});
  return TensorType{DataType::Int(32),
                    {x[0], o, conv_out(x[2], win.kh, win.sh, win.pt, win.pb, win.dh), conv_out(x[3], win.kw, win.sw, win.pl, win.pr, win.dw)}};
}

// The padded data as words [N, C/4, H', W'] (stage tag "pack_int8_data", materialized).
Tensor pack_data(const Tensor& x, const TensorType& xt, const Window& w) {
  bool is_signed = xt.dtype == DataType::Int(8);
  int64_t C = xt.shape[1], H = xt.shape[2], W = xt.shape[3];
  Expr pad = i32(is_signed ? 128 : 0);
  return te::compute(
      {i32(xt.shape[0]), i32(ceil_div(C, kBytes)), i32(H + w.pt + w.pb), i32(W + w.pl + w.pr)},
      [&](const std::vector<Var>& i) {
        Expr y = i[2] - i32(w.pt), xx = i[3] - i32(w.pl);
        Expr inside = y >= 0 && y < i32(H) && xx >= 0 && xx < i32(W);
        Expr cy = ir::min(ir::max(y, 0), i32(H - 1)), cx = ir::min(ir::max(xx, 0), i32(W - 1));
        return word([&](int j) {
          Expr c = i[1] * i32(kBytes) + i32(j);
          bool pad_c = C % kBytes != 0;
          Expr v = data_byte(x(i[0], pad_c ? ir::min(c, i32(C - 1)) : c, cy, cx), is_signed);
          return ir::select(pad_c ? inside && c < i32(C) : inside, v, pad);
        });
      },
      "pack_int8_data", "injective");
}

Tensor compute_conv(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType xt = type_of(in[0]), wt = type_of(in[1]);
  Window w = window(a, {wt.shape[2], wt.shape[3]});
  Tensor data = pack_data(in[0], xt, w);
  const Tensor& words = in[1];
  ir::IterVar rc = te::reduce_axis(i32(wt.shape[1]), "rc");
  ir::IterVar ry = te::reduce_axis(i32(w.kh), "ry");
  ir::IterVar rx = te::reduce_axis(i32(w.kw), "rx");
  // [N, O/16, OH, OW, 16]: the block of 16 output channels is the vector.
  Tensor blocked = te::compute(
      {i32(out.shape[0]), i32(wt.shape[0]), i32(out.shape[2]), i32(out.shape[3]), i32(kLanes)},
      [&](const std::vector<Var>& i) {
        Expr y = i[2] * i32(w.sh) + ry->var * i32(w.dh);
        Expr x = i[3] * i32(w.sw) + rx->var * i32(w.dw);
        return te::sum(dot_u8s8x4(data(i[0], rc->var, y, x), words(i[1], rc->var, ry->var, rx->var, i[4])), {rc, ry, rx});
      },
      "conv2d_nchwc_int8", "conv2d_nchwc_int8");
  bool is_signed = in.size() == 3;
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr v = blocked(i[0], i[1] / i32(kLanes), i[2], i[3], i[1] % i32(kLanes));
        return is_signed ? v - in[2](i[1]) : v;
      },
      "conv2d_nchw_view", "injective");
}

// ---------------------------------------------------------------- dense

TensorType infer_dense(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  int64_t n = a.get_int("units", 0);
  if (x.size() != 2 || w.size() != 3 || w[2] != kLanes) fail("dense_int8 takes [M, K] data and [N/16, K/4, 16] words");
  if (n <= 0 || ceil_div(n, kLanes) != w[0]) fail(fmt::format("{} units do not fill {} blocks of 16", n, w[0]));
  if (ceil_div(x[1], kBytes) != w[1]) fail(fmt::format("the words hold {} inputs, the data has {}", w[1] * kBytes, x[1]));
  check_operands(in, n, "dense_int8");
  return TensorType{DataType::Int(32), {x[0], n}};
}

Tensor compute_dense(const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
  TensorType xt = type_of(in[0]), wt = type_of(in[1]);
  bool is_signed = in.size() == 3;
  int64_t K = xt.shape[1];
  const Tensor& x = in[0];
  Tensor data = te::compute(
      {i32(xt.shape[0]), i32(wt.shape[1])},
      [&](const std::vector<Var>& i) {
        return word([&](int j) {
          Expr k = i[1] * i32(kBytes) + i32(j);
          return ir::select(k < i32(K), data_byte(x(i[0], ir::min(k, i32(K - 1))), is_signed), i32(0));
        });
      },
      "pack_int8_data", "injective");
  ir::IterVar rk = te::reduce_axis(i32(wt.shape[1]), "rk");
  Tensor blocked = te::compute(
      {i32(out.shape[0]), i32(wt.shape[0]), i32(kLanes)},
      [&](const std::vector<Var>& i) { return te::sum(dot_u8s8x4(data(i[0], rk->var), in[1](i[1], rk->var, i[2])), {rk}); },
      "dense_int8", "dense_int8");
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr v = blocked(i[0], i[1] / i32(kLanes), i[1] % i32(kLanes));
        return is_signed ? v - in[2](i[1]) : v;
      },
      "dense_view", "injective");
}

}  // namespace

void register_int8_ops() {
  reg({"pack_int8_weight", OpPattern::Injective, 1, 0, infer_pack, compute_pack});
  reg({"int8_weight_offset", OpPattern::CommReduce, 1, 0, infer_offset, compute_offset});
  reg({"conv2d_nchwc_int8", OpPattern::OutEWiseFusable, 2, 3, infer_conv, compute_conv});
  reg({"dense_int8", OpPattern::OutEWiseFusable, 2, 3, infer_dense, compute_dense});
}

}  // namespace kiln::graph::detail
