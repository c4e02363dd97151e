// The Winograd convolution of the CPU's blocked layout (the pass that places it:
// passes/winograd.cc; the matrices: winograd.h).
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | conv2d_winograd | data NCHWc [N, C/c, H, W, c], weight [alpha^2, C, O] (winograd::transform_weight) | pads [t,l,b,r], block, tile (2 or 4) | out_elemwise_fusable |
//
// conv2d_winograd is a 3x3 convolution of stride 1 (cross-correlation, as conv2d) whose
// output is NCHWc [N, O/b, OH, OW, b], computed in tiles of m x m pixels (m = `tile`,
// alpha = m + 2; the last row and column of tiles may reach past the output). Its
// stages (tags): the padded data ("pad"); each input tile's transform B^T d B
// ("winograd_input", [alpha^2, P, C] for the N * ceil(OH/m) * ceil(OW/m) tiles, P
// rounded up to a multiple of kTileRows, written out as additions and multiplies by
// constants); alpha^2 matrix products M[e] = V[e] . weight[e] ("matmul",
// [alpha^2, P, O]); and each output tile's A^T M A ("winograd_output").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/graph/op_util.h"
#include "compiler/graph/winograd.h"
#include "compiler/ir/op.h"
#include "compiler/te/ops.h"

namespace kiln::graph {

namespace winograd {

namespace {

// Lavin & Gray's matrices (interpolation points 0, 1, -1 and, for m = 4, 2, -2).
constexpr double kBT2[] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
constexpr double kG2[] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
constexpr double kAT2[] = {1, 1, 1, 0, 0, 1, -1, -1};
constexpr double kBT4[] = {4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                           0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1};
constexpr double kG4[] = {1.0 / 4,  0,        0,       -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6,
                          1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0,        0,       1};
constexpr double kAT4[] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};

}  // namespace

const Transform& transform(int m) {
  static const Transform f2{2, 4, kBT2, kG2, kAT2}, f4{4, 6, kBT4, kG4, kAT4};
  if (m == 2) return f2;
  if (m == 4) return f4;
  detail::fail(fmt::format("winograd: no F({0}x{0}, 3x3) (tiles of 2 or 4)", m));
}

ConstData transform_weight(const interp::HostBuffer& w, int m) {
  const Transform& f = transform(m);
  const auto& s = w.shape();
  if (s.size() != 4 || s[2] != kKernel || s[3] != kKernel) detail::fail("winograd: the weight must be [O, C, 3, 3]");
  int64_t O = s[0], C = s[1];
  const int a = f.alpha;
  auto u = std::make_shared<interp::HostBuffer>(w.dtype(), std::vector<int64_t>{a * a, C, O});
  std::vector<double> gg(static_cast<size_t>(a * kKernel));  // G g
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (o * C + c) * kKernel * kKernel;
      std::fill(gg.begin(), gg.end(), 0.0);
      for (int xi = 0; xi < a; ++xi)
        for (int k2 = 0; k2 < kKernel; ++k2)
          for (int k1 = 0; k1 < kKernel; ++k1) gg[xi * kKernel + k2] += f.g[xi * kKernel + k1] * w.get(base + k1 * kKernel + k2);
      for (int xi = 0; xi < a; ++xi)
        for (int nu = 0; nu < a; ++nu) {
          double v = 0;
          for (int k2 = 0; k2 < kKernel; ++k2) v += gg[xi * kKernel + k2] * f.g[nu * kKernel + k2];
          u->set(((xi * a + nu) * C + c) * O + o, v);
        }
    }
  return u;
}

}  // namespace winograd

namespace detail {

namespace {

using ir::Expr;
using ir::Var;
using te::Tensor;
using namespace winograd;

Expr I(int64_t v) { return Expr(static_cast<int>(v)); }

// sum_k coef[k] * x[k] over the nonzero coefficients, positive terms first, as
// additions and subtractions where a coefficient is +-1.
Expr linear(const double* coef, const std::vector<Expr>& x, ir::DataType t) {
  std::vector<int> order;
  for (int k = 0; k < static_cast<int>(x.size()); ++k)
    if (coef[k] > 0) order.push_back(k);
  for (int k = 0; k < static_cast<int>(x.size()); ++k)
    if (coef[k] < 0) order.push_back(k);
  Expr acc;
  for (int k : order) {
    double mag = std::abs(coef[k]);
    Expr v = mag == 1 ? x[k] : x[k] * ir::make_const(t, mag);
    if (!acc.defined()) acc = coef[k] > 0 ? v : -v;
    else acc = coef[k] > 0 ? acc + v : acc - v;
  }
  return acc.defined() ? acc : ir::make_const(t, 0);
}

// The choice among `arms` by the index `e` (0 .. arms.size() - 1): once the loop over e
// is unrolled, the conditions are constants and each copy keeps its own arm.
Expr choose(const Expr& e, const std::vector<Expr>& arms) {
  Expr r = arms.back();
  for (size_t k = arms.size() - 1; k-- > 0;) r = ir::select(ir::eq(e, I(static_cast<int64_t>(k))), arms[k], r);
  return r;
}

TensorType infer_conv2d_winograd(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  const Transform& f = transform(static_cast<int>(a.get_int("tile", 2)));
  if (x.size() != 5 || w.size() != 3 || w[0] != f.alpha * f.alpha)
    fail(fmt::format("conv2d_winograd with tiles of {} takes NCHWc data and a [{}, C, O] weight", f.m, f.alpha * f.alpha));
  if (in[0].dtype != in[1].dtype || !in[0].dtype.is_float()) fail("conv2d_winograd takes float operands of one type");
  if (w[1] != x[1] * x[4]) fail(fmt::format("weight expects {} input channels, data has {}", w[1], x[1] * x[4]));
  int64_t b = a.get_int("block", 0);
  if (b <= 0 || w[2] % b) fail(fmt::format("block {} does not divide the {} output channels", b, w[2]));
  Window win = window(a, {kKernel, kKernel});
  if (win.sh != 1 || win.sw != 1 || win.dh != 1 || win.dw != 1) fail("conv2d_winograd takes strides and dilations of 1");
  int64_t oh = conv_out(x[2], kKernel, 1, win.pt, win.pb, 1), ow = conv_out(x[3], kKernel, 1, win.pl, win.pr, 1);
  return TensorType{in[0].dtype, {x[0], w[2] / b, oh, ow, b}};
}

Tensor compute_conv2d_winograd(const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
  Window win = window(a, {kKernel, kKernel});
  const Transform& f = transform(static_cast<int>(a.get_int("tile", 2)));
  const int m = f.m, alpha = f.alpha;
  TensorType xt = type_of(in[0]), wt = type_of(in[1]);
  ir::DataType t = xt.dtype;
  int64_t n = xt.shape[0], cb = xt.shape[4], C = wt.shape[1], O = wt.shape[2], b = out.shape[4];
  // Tiles over the whole output, the last row and column of them partly outside (their
  // pixels beyond it are computed from zeros and not stored).
  int64_t th = (out.shape[2] + m - 1) / m, tw = (out.shape[3] + m - 1) / m, tiles = tile_count(n, out.shape[2], out.shape[3], m);
  int64_t extra_h = th * m - out.shape[2], extra_w = tw * m - out.shape[3];
  // Tiles in a multiple of kTileRows, so that the products' register tile divides them
  // (14x14 pixels are 49 tiles); the extra ones repeat the last and are not read.
  int64_t rows = product_rows(tiles);
  Tensor data = in[0];
  if (win.pt || win.pl || win.pb + extra_h || win.pr + extra_w)
    data = te::pad(data, {0, 0, static_cast<int>(win.pt), static_cast<int>(win.pl), 0},
                   {0, 0, static_cast<int>(win.pb + extra_h), static_cast<int>(win.pr + extra_w), 0}, Expr(), "pad");
  // V[e, p, c]: tile p's alpha x alpha window of channel c, B^T d B, element
  // e = alpha * xi + nu.
  Tensor v = te::compute(
      {I(alpha * alpha), I(rows), I(C)},
      [&](const std::vector<Var>& i) {
        Expr p = rows == tiles ? Expr(i[1]) : ir::min(i[1], I(tiles - 1)), c = i[2];
        Expr img = p / I(th * tw), y0 = p / I(tw) % I(th) * m, x0 = p % I(tw) * m;
        std::vector<Expr> arms;
        for (int xi = 0; xi < alpha; ++xi)
          for (int nu = 0; nu < alpha; ++nu) {
            std::vector<Expr> col;  // sum_r2 d[r1][r2] B^T[nu][r2], for each r1
            for (int r1 = 0; r1 < alpha; ++r1) {
              std::vector<Expr> d;
              for (int r2 = 0; r2 < alpha; ++r2) d.push_back(data(img, c / I(cb), y0 + r1, x0 + r2, c % I(cb)));
              col.push_back(linear(f.bt + nu * alpha, d, t));
            }
            arms.push_back(linear(f.bt + xi * alpha, col, t));
          }
        return choose(i[0], arms);
      },
      "winograd_input", "winograd_input");
  ir::IterVar k = te::reduce_axis(I(C), "rc");
  const Tensor& u = in[1];
  Tensor prod = te::compute(
      {I(alpha * alpha), I(rows), I(O)},
      [&](const std::vector<Var>& i) { return te::sum(v(i[0], i[1], k->var) * u(i[0], k->var, i[2]), {k}); }, "winograd_gemm",
      "matmul");
  // Y[img, ob, y, x, bi]: element (y % m, x % m) of its tile's A^T M A.
  return te::compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr p = i[0] * I(th * tw) + i[2] / I(m) * I(tw) + i[3] / I(m);
        Expr o = i[1] * I(b) + i[4];
        std::vector<Expr> arms;
        for (int ti = 0; ti < m; ++ti)
          for (int tj = 0; tj < m; ++tj) {
            std::vector<Expr> col;
            for (int xi = 0; xi < alpha; ++xi) {
              std::vector<Expr> row;
              for (int nu = 0; nu < alpha; ++nu) row.push_back(prod(I(xi * alpha + nu), p, o));
              col.push_back(linear(f.at + tj * alpha, row, t));
            }
            arms.push_back(linear(f.at + ti * alpha, col, t));
          }
        return choose(i[2] % I(m) * I(m) + i[3] % I(m), arms);
      },
      "winograd_output", "winograd_output");
}

}  // namespace

void register_winograd_ops() {
  reg({"conv2d_winograd", OpPattern::OutEWiseFusable, 2, 0, infer_conv2d_winograd, compute_conv2d_winograd});
}

}  // namespace detail

}  // namespace kiln::graph
