#include "compiler/te/ops.h"

#include "compiler/ir/analyzer.h"
#include "compiler/support/error.h"

namespace kiln::te {

namespace {

int64_t const_dim(const Expr& e, const std::string& op) {
  const int64_t* v = ir::as_const_int(ir::simplify(e));
  if (!v) throw CompileError(op + ": shapes must be constant");
  return *v;
}

}  // namespace

std::vector<Expr> broadcast_shape(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<Expr> out(n);
  for (size_t i = 0; i < n; ++i) {
    const Expr* x = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const Expr* y = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!x) {
      out[i] = *y;
    } else if (!y) {
      out[i] = *x;
    } else {
      int64_t dx = const_dim(*x, "broadcast"), dy = const_dim(*y, "broadcast");
      if (dx != dy && dx != 1 && dy != 1) {
        throw CompileError("broadcast: dimension " + std::to_string(i) + " is " + std::to_string(dx) + " in one operand and " +
                           std::to_string(dy) + " in the other");
      }
      out[i] = dx == 1 ? *y : *x;
    }
  }
  return out;
}

namespace {

// Indices into `t` for an element of the broadcast output at `idx`.
std::vector<Expr> broadcast_index(const Tensor& t, const std::vector<Var>& idx) {
  std::vector<Expr> out;
  size_t off = idx.size() - t.ndim();
  for (size_t d = 0; d < t.ndim(); ++d) {
    out.push_back(ir::is_const_int(ir::simplify(t->shape[d]), 1) ? Expr(0) : Expr(idx[off + d]));
  }
  return out;
}

}  // namespace

Tensor elementwise(const Tensor& x, const UnaryFn& f, std::string name) {
  return compute(x->shape, [&](const std::vector<Var>& i) { return f(x(std::vector<Expr>(i.begin(), i.end()))); },
                 std::move(name), "elemwise");
}

Tensor broadcast_binary(const Tensor& a, const Tensor& b, const BinaryFn& f, std::string name) {
  std::vector<Expr> shape = broadcast_shape(a->shape, b->shape);
  return compute(shape, [&](const std::vector<Var>& i) { return f(a(broadcast_index(a, i)), b(broadcast_index(b, i))); },
                 std::move(name), "broadcast");
}

Tensor add(const Tensor& a, const Tensor& b) { return broadcast_binary(a, b, [](Expr x, Expr y) { return x + y; }, "add"); }
Tensor subtract(const Tensor& a, const Tensor& b) {
  return broadcast_binary(a, b, [](Expr x, Expr y) { return x - y; }, "subtract");
}
Tensor multiply(const Tensor& a, const Tensor& b) {
  return broadcast_binary(a, b, [](Expr x, Expr y) { return x * y; }, "multiply");
}
Tensor divide(const Tensor& a, const Tensor& b) { return broadcast_binary(a, b, [](Expr x, Expr y) { return x / y; }, "divide"); }
Tensor maximum(const Tensor& a, const Tensor& b) {
  return broadcast_binary(a, b, [](Expr x, Expr y) { return ir::max(x, y); }, "maximum");
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return broadcast_binary(a, b, [](Expr x, Expr y) { return ir::min(x, y); }, "minimum");
}
Tensor relu(const Tensor& x) {
  return elementwise(x, [&](Expr v) { return ir::max(v, ir::make_const(x->dtype, 0)); }, "relu");
}
Tensor negative(const Tensor& x) { return elementwise(x, [](Expr v) { return -v; }, "negative"); }
Tensor exp(const Tensor& x) { return elementwise(x, [](Expr v) { return ir::exp(v); }, "exp"); }
Tensor sigmoid(const Tensor& x) { return elementwise(x, [](Expr v) { return ir::sigmoid(v); }, "sigmoid"); }
Tensor tanh(const Tensor& x) { return elementwise(x, [](Expr v) { return ir::tanh(v); }, "tanh"); }
Tensor cast(const Tensor& x, DataType t) { return elementwise(x, [&](Expr v) { return ir::cast(t, v); }, "cast"); }

Tensor matmul(const Tensor& a, const Tensor& b, std::string name) {
  if (a.ndim() != 2 || b.ndim() != 2) throw CompileError("matmul: operands must be matrices");
  if (const_dim(a->shape[1], "matmul") != const_dim(b->shape[0], "matmul")) {
    throw CompileError("matmul: inner dimensions differ (" + std::to_string(const_dim(a->shape[1], "matmul")) + " and " +
                       std::to_string(const_dim(b->shape[0], "matmul")) + ")");
  }
  IterVar k = reduce_axis(a->shape[1], "k");
  return compute({a->shape[0], b->shape[1]},
                 [&](const std::vector<Var>& i) { return sum(a(i[0], k->var) * b(k->var, i[1]), {k}); }, std::move(name),
                 "matmul");
}

Tensor dense(const Tensor& x, const Tensor& w, const Tensor& bias, std::string name) {
  if (x.ndim() != 2 || w.ndim() != 2) throw CompileError("dense: operands must be matrices");
  if (const_dim(x->shape[1], "dense") != const_dim(w->shape[1], "dense")) throw CompileError("dense: reduction dimensions differ");
  IterVar k = reduce_axis(x->shape[1], "k");
  Tensor y = compute({x->shape[0], w->shape[0]},
                     [&](const std::vector<Var>& i) { return sum(x(i[0], k->var) * w(i[1], k->var), {k}); }, name, "dense");
  if (!bias.defined()) return y;
  return compute(y->shape, [&](const std::vector<Var>& i) { return y(i[0], i[1]) + bias(i[1]); }, name + ".bias", "broadcast");
}

Tensor pad(const Tensor& x, std::vector<Expr> before, std::vector<Expr> after, Expr value, std::string name, bool split_border) {
  size_t n = x.ndim();
  if (before.size() != n || after.size() != n) throw CompileError("pad: one before/after amount per dimension needed");
  if (!value.defined()) value = ir::make_const(x->dtype, 0);
  value = ir::cast(x->dtype, value);
  std::vector<Expr> shape;
  for (size_t d = 0; d < n; ++d) shape.push_back(ir::simplify(x->shape[d] + before[d] + after[d]));
  return compute(shape,
                 [&](const std::vector<Var>& i) {
                   Expr inside = ir::make_bool(true);
                   std::vector<Expr> idx;
                   for (size_t d = 0; d < n; ++d) {
                     bool trivial = ir::is_const_int(before[d], 0) && ir::is_const_int(after[d], 0);
                     idx.push_back(ir::simplify(i[d] - before[d]));
                     if (trivial) continue;
                     Expr lo = i[d] >= before[d], hi = i[d] < before[d] + x->shape[d];
                     Expr ok = split_border ? ir::likely(lo) && ir::likely(hi) : lo && hi;
                     inside = ir::is_const_int(inside, 1) ? ok : (inside && ok);
                   }
                   if (ir::is_const_int(inside, 1)) return x(idx);
                   // Clamp the indices so that the unselected branch never reads out of bounds.
                   std::vector<Expr> safe;
                   for (size_t d = 0; d < n; ++d) safe.push_back(ir::max(ir::min(idx[d], x->shape[d] - 1), 0));
                   return ir::select(inside, x(safe), value);
                 },
                 std::move(name), "injective");
}

Tensor conv2d_nchw(const Tensor& data, const Tensor& kernel, const Conv2DParams& p, std::string name) {
  if (data.ndim() != 4 || kernel.ndim() != 4) throw CompileError("conv2d: data and kernel must be rank 4 (NCHW, OIHW)");
  int64_t c = const_dim(data->shape[1], "conv2d"), h = const_dim(data->shape[2], "conv2d"), w = const_dim(data->shape[3], "conv2d");
  int64_t o = const_dim(kernel->shape[0], "conv2d"), ci = const_dim(kernel->shape[1], "conv2d");
  int64_t kh = const_dim(kernel->shape[2], "conv2d"), kw = const_dim(kernel->shape[3], "conv2d");
  if (p.groups < 1 || c % p.groups != 0 || o % p.groups != 0) throw CompileError("conv2d: groups must divide the input and output channels");
  if (ci != c / p.groups) {
    throw CompileError("conv2d: kernel has " + std::to_string(ci) + " input channels, expected " + std::to_string(c / p.groups));
  }
  int64_t oh = (h + 2 * p.padding[0] - p.dilation[0] * (kh - 1) - 1) / p.stride[0] + 1;
  int64_t ow = (w + 2 * p.padding[1] - p.dilation[1] * (kw - 1) - 1) / p.stride[1] + 1;
  if (oh <= 0 || ow <= 0) throw CompileError("conv2d: the output would be empty");
  Tensor in = data;
  if (p.padding[0] != 0 || p.padding[1] != 0) {
    in = pad(data, {0, 0, p.padding[0], p.padding[1]}, {0, 0, p.padding[0], p.padding[1]}, Expr(), name + ".pad");
  }
  IterVar rc = reduce_axis(Expr(static_cast<int>(ci)), "rc");
  IterVar ry = reduce_axis(Expr(static_cast<int>(kh)), "ry");
  IterVar rx = reduce_axis(Expr(static_cast<int>(kw)), "rx");
  int64_t o_per_group = o / p.groups;
  return compute({data->shape[0], kernel->shape[0], Expr(static_cast<int>(oh)), Expr(static_cast<int>(ow))},
                 [&](const std::vector<Var>& i) {
                   Expr chan = rc->var;
                   if (p.groups > 1) chan = i[1] / static_cast<int>(o_per_group) * static_cast<int>(ci) + rc->var;
                   Expr y = i[2] * p.stride[0] + ry->var * p.dilation[0];
                   Expr x = i[3] * p.stride[1] + rx->var * p.dilation[1];
                   return sum(in(i[0], chan, y, x) * kernel(i[1], rc->var, ry->var, rx->var), {rc, ry, rx});
                 },
                 std::move(name), "conv2d", {"n", "f", "y", "x"});
}

Tensor pool2d(const Tensor& data, PoolKind kind, const Pool2DParams& p, std::string name) {
  if (data.ndim() != 4) throw CompileError("pool2d: data must be rank 4 (NCHW)");
  int64_t h = const_dim(data->shape[2], "pool2d"), w = const_dim(data->shape[3], "pool2d");
  int64_t oh = (h + 2 * p.padding[0] - p.kernel[0]) / p.stride[0] + 1;
  int64_t ow = (w + 2 * p.padding[1] - p.kernel[1]) / p.stride[1] + 1;
  if (oh <= 0 || ow <= 0) throw CompileError("pool2d: the output would be empty");
  IterVar ry = reduce_axis(Expr(p.kernel[0]), "ry");
  IterVar rx = reduce_axis(Expr(p.kernel[1]), "rx");
  std::vector<Expr> shape = {data->shape[0], data->shape[1], Expr(static_cast<int>(oh)), Expr(static_cast<int>(ow))};
  auto window = [&](const std::vector<Var>& i, Expr* y, Expr* x, Expr* inside) {
    *y = i[2] * p.stride[0] + ry->var - p.padding[0];
    *x = i[3] * p.stride[1] + rx->var - p.padding[1];
    *inside = *y >= 0 && *y < static_cast<int>(h) && *x >= 0 && *x < static_cast<int>(w);
  };
  auto clamp = [](Expr v, int64_t n) { return ir::max(ir::min(v, static_cast<int>(n - 1)), 0); };
  if (kind == PoolKind::Max) {
    return compute(shape,
                   [&](const std::vector<Var>& i) {
                     Expr y, x, inside;
                     window(i, &y, &x, &inside);
                     Expr v = data(i[0], i[1], clamp(y, h), clamp(x, w));
                     bool padded = p.padding[0] != 0 || p.padding[1] != 0;
                     return max_reduce(v, {ry, rx}, padded ? inside : Expr());
                   },
                   std::move(name), "pool", {"n", "c", "y", "x"});
  }
  Tensor total = compute(shape,
                         [&](const std::vector<Var>& i) {
                           Expr y, x, inside;
                           window(i, &y, &x, &inside);
                           return sum(data(i[0], i[1], clamp(y, h), clamp(x, w)), {ry, rx}, inside);
                         },
                         name + ".sum", "pool", {"n", "c", "y", "x"});
  return compute(shape,
                 [&](const std::vector<Var>& i) {
                   // number of window elements inside the image
                   Expr y0 = i[2] * p.stride[0] - p.padding[0], x0 = i[3] * p.stride[1] - p.padding[1];
                   Expr hy = ir::min(y0 + p.kernel[0], static_cast<int>(h)) - ir::max(y0, 0);
                   Expr hx = ir::min(x0 + p.kernel[1], static_cast<int>(w)) - ir::max(x0, 0);
                   return total(i[0], i[1], i[2], i[3]) / ir::cast(data->dtype, hy * hx);
                 },
                 std::move(name), "pool", {"n", "c", "y", "x"});
}

Tensor reshape(const Tensor& x, std::vector<Expr> shape, std::string name) {
  int64_t in = 1, out = 1;
  for (const Expr& d : x->shape) in *= const_dim(d, "reshape");
  for (const Expr& d : shape) out *= const_dim(d, "reshape");
  if (in != out) throw CompileError("reshape: " + std::to_string(in) + " elements cannot become " + std::to_string(out));
  return compute(shape,
                 [&](const std::vector<Var>& i) {
                   Expr flat = 0;
                   for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + i[d];
                   std::vector<Expr> idx(x.ndim());
                   for (size_t d = x.ndim(); d-- > 0;) {
                     idx[d] = ir::simplify(flat % x->shape[d]);
                     flat = flat / x->shape[d];
                   }
                   return x(idx);
                 },
                 std::move(name), "injective");
}

Tensor transpose(const Tensor& x, std::vector<int> axes, std::string name) {
  size_t n = x.ndim();
  if (axes.size() != n) throw CompileError("transpose: one axis per dimension needed");
  std::vector<bool> used(n, false);
  for (int a : axes) {
    if (a < 0 || static_cast<size_t>(a) >= n || used[a]) throw CompileError("transpose: axes must be a permutation");
    used[a] = true;
  }
  std::vector<Expr> shape;
  for (int a : axes) shape.push_back(x->shape[a]);
  return compute(shape,
                 [&](const std::vector<Var>& i) {
                   std::vector<Expr> idx(n);
                   for (size_t d = 0; d < n; ++d) idx[axes[d]] = i[d];
                   return x(idx);
                 },
                 std::move(name), "injective");
}

}  // namespace kiln::te
