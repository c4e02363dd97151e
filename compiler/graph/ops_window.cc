// Windowed operators beyond 2-d NCHW: 3-d convolution, transposed convolution and
// pooling on [N, C, D, H, W] data, and MaxPool's indices for any spatial rank. The
// computes are written once over the spatial rank; 1-d data reaches the 2-d ops through
// a unit H dimension (the ONNX converters reshape it).
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | conv3d | data [N,C,D,H,W], weight [O,C/g,KD,KH,KW] | strides, pads [d0,h0,w0,d1,h1,w1], dilations, groups | out_elemwise_fusable |
// | conv3d_transpose | data, weight [C,O/g,KD,KH,KW] | strides, pads, dilations, output_padding, groups | out_elemwise_fusable |
// | max_pool3d avg_pool3d | x [N,C,D,H,W] | kernel, strides, pads, dilations, ceil_mode, count_include_pad | out_elemwise_fusable |
// | max_pool_indices | x [N,C,...] (any spatial rank) | kernel, strides, pads, dilations, ceil_mode, storage_order | out_elemwise_fusable |
// | max_unpool | x [N,C,...], indices (int64, MaxPool's) | kernel, strides, pads, output_shape | out_elemwise_fusable |
//
// pads list every spatial begin, then every end (ONNX's order). max_pool_indices is
// the int64 position of each window's maximum in the flattened input (the first in
// the window's row-major order on ties); storage_order 1 flattens the spatial
// dimensions column-major (N and C stay outermost), as ONNX's MaxPool Indices output.
#include <fmt/format.h>

#include "compiler/graph/op_util.h"
#include "compiler/ir/op.h"
#include "compiler/te/ops.h"

namespace kiln::graph::detail {

using ir::Expr;
using ir::Var;
using te::Tensor;

namespace {

// A window over r spatial dimensions.
struct NdWindow {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  size_t rank() const { return kernel.size(); }
  bool padded() const {
    for (size_t j = 0; j < rank(); ++j)
      if (begin[j] || end[j]) return true;
    return false;
  }
};

Expr I(int64_t v) { return Expr(static_cast<int>(v)); }

NdWindow nd_window(const Attrs& a, std::vector<int64_t> kernel) {
  size_t r = kernel.size();
  auto s = a.get_ints("strides", std::vector<int64_t>(r, 1));
  auto d = a.get_ints("dilations", std::vector<int64_t>(r, 1));
  auto p = a.get_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (s.size() != r || d.size() != r || p.size() != 2 * r)
    fail(fmt::format("a {}-d window needs {} strides, {} dilations and {} pads (got {}, {}, {})", r, r, r, 2 * r, s.size(),
                     d.size(), p.size()));
  NdWindow w{kernel, s, d, {}, {}};
  for (size_t j = 0; j < r; ++j) {
    if (kernel[j] <= 0) fail("kernel sizes must be positive");
    if (s[j] <= 0) fail("strides must be positive");
    if (d[j] <= 0) fail("dilations must be positive");
    if (p[j] < 0 || p[j + r] < 0) fail("pads must not be negative");
    w.begin.push_back(p[j]);
    w.end.push_back(p[j + r]);
  }
  return w;
}

std::vector<int64_t> spatial(const std::vector<int64_t>& shape) { return std::vector<int64_t>(shape.begin() + 2, shape.end()); }

void require_rank(const TensorType& t, size_t rank, const char* what) {
  if (t.shape.size() != rank) fail(fmt::format("{} must be {}-d, got {}", what, rank, t.to_string()));
}

// One reduction axis per window dimension.
std::vector<ir::IterVar> window_axes(const NdWindow& w) {
  std::vector<ir::IterVar> rk;
  for (size_t j = 0; j < w.rank(); ++j) rk.push_back(te::reduce_axis(I(w.kernel[j]), fmt::format("rk{}", j)));
  return rk;
}

// ---------------------------------------------------------------- convolution

TensorType infer_conv3d(const std::vector<TensorType>& in, const Attrs& a) {
  require_rank(in[0], 5, "data");
  require_rank(in[1], 5, "weight");
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  int64_t g = a.get_int("groups", 1);
  if (g <= 0 || x[1] % g != 0 || w[0] % g != 0) fail(fmt::format("groups={} does not divide the channels", g));
  if (w[1] * g != x[1]) fail(fmt::format("weight expects {} input channels, data has {}", w[1] * g, x[1]));
  if (in[0].dtype != in[1].dtype) fail("data and weight types differ");
  NdWindow win = nd_window(a, spatial(w));
  std::vector<int64_t> out = {x[0], w[0]};
  for (size_t j = 0; j < win.rank(); ++j)
    out.push_back(conv_out(x[j + 2], win.kernel[j], win.strides[j], win.begin[j], win.end[j], win.dilations[j]));
  return TensorType{in[0].dtype, out};
}

// out[n, o, y...] = sum over c, k... of data[n, g(o) + c, y*s + k*d - p...] * w[o, c, k...].
Tensor compute_conv_nd(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out, const char* name) {
  TensorType wt = type_of(in[1]);
  NdWindow w = nd_window(a, spatial(wt.shape));
  size_t r = w.rank();
  Tensor data = in[0];
  if (w.padded()) {
    std::vector<Expr> before = {0, 0}, after = {0, 0};
    for (size_t j = 0; j < r; ++j) {
      before.push_back(I(w.begin[j]));
      after.push_back(I(w.end[j]));
    }
    data = te::pad(data, before, after, Expr(), "pad");
  }
  int64_t g = a.get_int("groups", 1);
  int64_t cin_g = wt.shape[1], cout_g = out.shape[1] / g;
  ir::IterVar rc = te::reduce_axis(I(cin_g), "rc");
  std::vector<ir::IterVar> rk = window_axes(w), axes = {rc};
  axes.insert(axes.end(), rk.begin(), rk.end());
  const Tensor& weight = in[1];
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr c = g == 1 ? Expr(rc->var) : Expr(i[1] / I(cout_g) * I(cin_g) + rc->var);
        std::vector<Expr> xi = {i[0], c}, wi = {i[1], rc->var};
        for (size_t j = 0; j < r; ++j) {
          xi.push_back(i[j + 2] * I(w.strides[j]) + rk[j]->var * I(w.dilations[j]));
          wi.push_back(rk[j]->var);
        }
        return te::sum(data(xi) * weight(wi), axes);
      },
      name, name);
}

TensorType infer_conv3d_transpose(const std::vector<TensorType>& in, const Attrs& a) {
  require_rank(in[0], 5, "data");
  require_rank(in[1], 5, "weight");
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  int64_t g = a.get_int("groups", 1);
  if (g <= 0 || x[1] % g != 0) fail(fmt::format("groups={} does not divide the {} input channels", g, x[1]));
  if (w[0] != x[1]) fail(fmt::format("weight expects {} input channels, data has {}", w[0], x[1]));
  if (in[0].dtype != in[1].dtype) fail("data and weight types differ");
  NdWindow win = nd_window(a, spatial(w));
  auto op = a.get_ints("output_padding", std::vector<int64_t>(win.rank(), 0));
  if (op.size() != win.rank()) fail(fmt::format("output_padding needs {} entries", win.rank()));
  std::vector<int64_t> out = {x[0], w[1] * g};
  for (size_t j = 0; j < win.rank(); ++j) {
    if (op[j] < 0) fail("output_padding must not be negative");
    int64_t n = (x[j + 2] - 1) * win.strides[j] - win.begin[j] - win.end[j] + win.dilations[j] * (win.kernel[j] - 1) + op[j] + 1;
    if (n <= 0) fail("the output would be empty");
    out.push_back(n);
  }
  return TensorType{in[0].dtype, out};
}

// out[n, o, y...] = sum over c, k... with y + p - k*d = iy*s of data[n, c, iy...] * w[c, o, k...]
// (c over the input channels of o's group).
Tensor compute_conv_transpose_nd(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out, const char* name) {
  TensorType xt = type_of(in[0]), wt = type_of(in[1]);
  NdWindow w = nd_window(a, spatial(wt.shape));
  size_t r = w.rank();
  int64_t g = a.get_int("groups", 1);
  int64_t cin_g = xt.shape[1] / g, cout_g = wt.shape[1];
  ir::IterVar rc = te::reduce_axis(I(cin_g), "rc");
  std::vector<ir::IterVar> rk = window_axes(w), axes = {rc};
  axes.insert(axes.end(), rk.begin(), rk.end());
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr c = g == 1 ? Expr(rc->var) : Expr(i[1] / I(cout_g) * I(cin_g) + rc->var);
        Expr o = g == 1 ? Expr(i[1]) : Expr(i[1] % I(cout_g));
        Expr ok = ir::make_bool(true);
        std::vector<Expr> xi = {i[0], c}, wi = {c, o};
        for (size_t j = 0; j < r; ++j) {
          int64_t n = xt.shape[j + 2];
          Expr t = i[j + 2] + I(w.begin[j]) - rk[j]->var * I(w.dilations[j]);
          Expr iy = t / I(w.strides[j]);
          Expr inside = t >= 0 && iy < I(n);
          if (w.strides[j] > 1) inside = inside && ir::eq(t % I(w.strides[j]), 0);
          ok = j == 0 ? inside : (ok && inside);
          xi.push_back(ir::min(ir::max(iy, 0), I(n - 1)));
          wi.push_back(rk[j]->var);
        }
        Expr v = ir::select(ok, in[0](xi), ir::make_const(xt.dtype, 0));
        return te::sum(v * in[1](wi), axes);
      },
      name, name);
}

// ---------------------------------------------------------------- pooling

std::vector<int64_t> pool_out_shape(const TensorType& x, const NdWindow& w, bool ceil_mode) {
  std::vector<int64_t> out = {x.shape[0], x.shape[1]};
  for (size_t j = 0; j < w.rank(); ++j) {
    if (w.begin[j] >= w.kernel[j] || w.end[j] >= w.kernel[j]) fail("pads must be smaller than the window");
    out.push_back(conv_out(x.shape[j + 2], w.kernel[j], w.strides[j], w.begin[j], w.end[j], w.dilations[j], ceil_mode));
  }
  return out;
}

NdWindow pool_window(const TensorType& x, const Attrs& a) {
  if (x.ndim() < 3) fail(fmt::format("pooling takes [N, C, spatial...] data, got {}", x.to_string()));
  auto k = a.get_ints("kernel");
  if (k.size() != x.shape.size() - 2) fail(fmt::format("kernel has {} sizes, the data has {} spatial dimensions", k.size(), x.ndim() - 2));
  return nd_window(a, k);
}

TensorType infer_pool3d(const std::vector<TensorType>& in, const Attrs& a) {
  require_rank(in[0], 5, "pooling data");
  return TensorType{in[0].dtype, pool_out_shape(in[0], pool_window(in[0], a), a.get_int("ceil_mode", 0) != 0)};
}

// The input element under window position rk of output element i (indices clamped into
// the input; *ok says whether it lies inside, not in the padding).
Expr window_element(const Tensor& x, const TensorType& xt, const NdWindow& w, const std::vector<Var>& i,
                    const std::vector<Expr>& rk, Expr* ok, std::vector<Expr>* pos = nullptr) {
  std::vector<Expr> idx = {i[0], i[1]};
  for (size_t j = 0; j < w.rank(); ++j) {
    int64_t n = xt.shape[j + 2];
    Expr y = i[j + 2] * I(w.strides[j]) - I(w.begin[j]) + rk[j] * I(w.dilations[j]);
    Expr inside = y >= 0 && y < I(n);
    *ok = j == 0 ? inside : (*ok && inside);
    idx.push_back(ir::min(ir::max(y, 0), I(n - 1)));
    if (pos) pos->push_back(y);
  }
  return x(idx);
}

std::vector<Expr> vars(const std::vector<ir::IterVar>& axes) {
  std::vector<Expr> v;
  for (const auto& a : axes) v.push_back(a->var);
  return v;
}

Tensor compute_max_pool_nd(const Tensor& x, const NdWindow& w, const TensorType& out, const std::string& name) {
  TensorType xt = type_of(x);
  std::vector<ir::IterVar> rk = window_axes(w);
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) {
                       Expr ok;
                       Expr v = window_element(x, xt, w, i, vars(rk), &ok);
                       return te::max_reduce(v, rk, ok);
                     },
                     name, "pool");
}

// The divisor (as 2-d avg_pool2d and PyTorch): the window clipped to the padded input,
// or to the input when the padding is not counted.
Tensor compute_avg_pool_nd(const Tensor& x, const NdWindow& w, bool include_pad, const TensorType& out, const std::string& name) {
  TensorType xt = type_of(x);
  DataType t = xt.dtype;
  std::vector<ir::IterVar> rk = window_axes(w);
  Tensor s = te::compute(te_shape(out),
                         [&](const std::vector<Var>& i) {
                           Expr ok;
                           Expr v = window_element(x, xt, w, i, vars(rk), &ok);
                           return te::sum(ir::select(ok, v, ir::make_const(t, 0)), rk);
                         },
                         name + ".sum", "pool");
  return te::compute(te_shape(out),
                     [&](const std::vector<Var>& i) {
                       Expr count;
                       for (size_t j = 0; j < w.rank(); ++j) {
                         int64_t n = xt.shape[j + 2];
                         Expr start = i[j + 2] * I(w.strides[j]) - I(w.begin[j]);
                         Expr end = ir::min(start + I(w.kernel[j]), I(n + w.end[j]));
                         if (!include_pad) {
                           start = ir::max(start, 0);
                           end = ir::min(end, I(n));
                         }
                         count = j == 0 ? end - start : count * (end - start);
                       }
                       return s(as_exprs(i)) / ir::cast(t, count);
                     },
                     name, "pool");
}

// The window's maximum (a pooling stage), then the first window position holding it
// (a min-reduction over the row-major window position), then that position's index in
// the flattened input.
Tensor compute_max_pool_indices(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType xt = type_of(in[0]);
  NdWindow w = pool_window(xt, a);
  size_t r = w.rank();
  TensorType mt{xt.dtype, out.shape};
  Tensor m = compute_max_pool_nd(in[0], w, mt, "max_pool_indices.max");
  std::vector<ir::IterVar> rk = window_axes(w);
  Tensor first = te::compute(
      te_shape(mt),
      [&](const std::vector<Var>& i) {
        Expr ok;
        Expr v = window_element(in[0], xt, w, i, vars(rk), &ok);
        Expr linear;
        for (size_t j = 0; j < r; ++j) linear = j == 0 ? Expr(rk[j]->var) : linear * I(w.kernel[j]) + rk[j]->var;
        return te::min_reduce(linear, rk, ok && ir::eq(v, m(as_exprs(i))));
      },
      "max_pool_indices.first", "pool");
  bool column_major = a.get_int("storage_order", 0) != 0;
  DataType i64 = DataType::Int(64);
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        // Decode the window position (row-major over the kernel) into the input coordinates.
        Expr p = first(as_exprs(i));
        std::vector<Expr> k(r);
        for (size_t j = r; j-- > 0;) {
          k[j] = p % I(w.kernel[j]);
          p = p / I(w.kernel[j]);
        }
        Expr ok;
        std::vector<Expr> pos;
        window_element(in[0], xt, w, i, k, &ok, &pos);
        int64_t plane = 1;
        for (size_t j = 0; j < r; ++j) plane *= xt.shape[j + 2];
        Expr flat = ir::make_int(0, i64);
        for (size_t n = 0; n < r; ++n) {
          size_t j = column_major ? r - 1 - n : n;
          flat = flat * ir::make_int(xt.shape[j + 2], i64) + ir::cast(i64, pos[j]);
        }
        Expr nc = ir::cast(i64, i[0]) * ir::make_int(xt.shape[1], i64) + ir::cast(i64, i[1]);
        return nc * ir::make_int(plane, i64) + flat;
      },
      "max_pool_indices", "pool");
}

// ---------------------------------------------------------------- unpooling

TensorType infer_max_unpool(const std::vector<TensorType>& in, const Attrs& a) {
  const TensorType& x = in[0];
  if (in[1].shape != x.shape) fail(fmt::format("the indices {} and the values {} differ in shape", in[1].to_string(), x.to_string()));
  if (in[1].dtype != DataType::Int(64)) fail("the indices must be int64");
  NdWindow w = pool_window(x, a);
  auto out = a.get_ints("output_shape", {});
  if (out.empty()) {
    out = {x.shape[0], x.shape[1]};
    for (size_t j = 0; j < w.rank(); ++j) out.push_back((x.shape[j + 2] - 1) * w.strides[j] + w.kernel[j] - w.begin[j] - w.end[j]);
  }
  if (out.size() != x.shape.size() || out[0] != x.shape[0] || out[1] != x.shape[1])
    fail(fmt::format("output_shape [{}] does not fit the values {}", fmt::join(out, ", "), x.to_string()));
  for (int64_t d : out)
    if (d <= 0) fail(fmt::format("the output shape [{}] is empty", fmt::join(out, ", ")));
  for (int64_t d : w.dilations)
    if (d != 1) fail("max_unpool has no dilations");
  return TensorType{x.dtype, out};
}

// out[n, c, y...] = x[n, c, p...] for a window p that covers y and whose index is y's
// position in the flattened output, else 0. Only the windows covering y are read (at
// most ceil(k/s) per dimension), so the indices must be MaxPool's for this window: each
// inside its own window, as MaxPool makes them.
Tensor compute_max_unpool(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  TensorType xt = type_of(in[0]);
  NdWindow w = pool_window(xt, a);
  size_t r = w.rank();
  std::vector<ir::IterVar> rt;
  std::vector<int64_t> span;
  int64_t candidates = 1;
  for (size_t j = 0; j < r; ++j) {
    span.push_back((w.kernel[j] + w.strides[j] - 1) / w.strides[j]);
    candidates *= span.back();
    rt.push_back(te::reduce_axis(I(span.back()), fmt::format("rt{}", j)));
  }
  DataType i64 = DataType::Int(64);
  // The candidate window t (per dimension) of output element i, clamped into x, and
  // whether it exists and covers i.
  auto candidate = [&](const std::vector<Var>& i, const std::vector<Expr>& t, Expr* ok) {
    std::vector<Expr> idx = {i[0], i[1]};
    for (size_t j = 0; j < r; ++j) {
      int64_t n = xt.shape[j + 2];
      Expr p = (i[j + 2] + I(w.begin[j])) / I(w.strides[j]) - t[j];
      Expr inside = p >= 0 && p < I(n) && i[j + 2] < p * I(w.strides[j]) - I(w.begin[j]) + I(w.kernel[j]);
      *ok = j == 0 ? inside : (*ok && inside);
      idx.push_back(ir::min(ir::max(p, 0), I(n - 1)));
    }
    return idx;
  };
  Tensor found = te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr ok;
        std::vector<Expr> idx = candidate(i, vars(rt), &ok);
        Expr flat = ir::cast(i64, i[0]) * ir::make_int(out.shape[1], i64) + ir::cast(i64, i[1]);
        for (size_t j = 0; j < r; ++j) flat = flat * ir::make_int(out.shape[j + 2], i64) + ir::cast(i64, i[j + 2]);
        Expr linear;
        for (size_t j = 0; j < r; ++j) linear = j == 0 ? Expr(rt[j]->var) : linear * I(span[j]) + rt[j]->var;
        // The first matching candidate; `candidates` when none matches.
        return te::min_reduce(ir::select(ok && ir::eq(in[1](idx), flat), linear, I(candidates)), rt);
      },
      "max_unpool.found", "pool");
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr f = found(as_exprs(i));
        Expr p = f;
        std::vector<Expr> t(r);
        for (size_t j = r; j-- > 0;) {
          t[j] = p % I(span[j]);
          p = p / I(span[j]);
        }
        Expr ok;
        std::vector<Expr> idx = candidate(i, t, &ok);
        return ir::select(f < I(candidates), in[0](idx), ir::make_const(xt.dtype, 0));
      },
      "max_unpool", "pool");
}

}  // namespace

void register_window_ops() {
  reg({"conv3d", OpPattern::OutEWiseFusable, 2, 0, infer_conv3d,
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& o) { return compute_conv_nd(in, a, o, "conv3d"); }});
  reg({"conv3d_transpose", OpPattern::OutEWiseFusable, 2, 0, infer_conv3d_transpose,
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& o) {
         return compute_conv_transpose_nd(in, a, o, "conv3d_transpose");
       }});
  reg({"max_pool3d", OpPattern::OutEWiseFusable, 1, 0, infer_pool3d,
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& o) {
         return compute_max_pool_nd(in[0], pool_window(type_of(in[0]), a), o, "max_pool3d");
       }});
  reg({"avg_pool3d", OpPattern::OutEWiseFusable, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         for (int64_t d : a.get_ints("dilations", {1, 1, 1}))
           if (d != 1) fail("dilated average pooling is not supported");
         return infer_pool3d(in, a);
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& o) {
         return compute_avg_pool_nd(in[0], pool_window(type_of(in[0]), a), a.get_int("count_include_pad", 0) != 0, o,
                                    "avg_pool3d");
       }});
  reg({"max_pool_indices", OpPattern::OutEWiseFusable, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         return TensorType{DataType::Int(64), pool_out_shape(in[0], pool_window(in[0], a), a.get_int("ceil_mode", 0) != 0)};
       },
       compute_max_pool_indices});
  reg({"max_unpool", OpPattern::OutEWiseFusable, 2, 0, infer_max_unpool, compute_max_unpool});
}

}  // namespace kiln::graph::detail
