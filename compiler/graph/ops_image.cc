// Sampling an image at computed coordinates.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | grid_sample | x [N, C, H, W], grid [N, Ho, Wo, 2] (x, y in [-1, 1]) | mode (bilinear, nearest, bicubic), padding (zeros, border, reflection), align_corners | injective |
//
// grid_sample is ONNX's GridSample (opset 16), which is PyTorch's grid_sampler_2d:
// a grid value -1 is the left edge of the first pixel (align_corners 0) or its centre
// (align_corners 1); out-of-range taps read 0 (zeros), the nearest edge (border) or
// the mirror image (reflection); nearest rounds half to even; bicubic uses the cubic
// convolution coefficients with A = -0.75, each of its 16 taps padded on its own.
#include <fmt/format.h>

#include <array>

#include "compiler/graph/op_util.h"
#include "compiler/ir/op.h"

namespace kiln::graph::detail {

using ir::Expr;
using ir::Var;
using te::Tensor;

namespace {

const DataType kF = DataType::Float(64);

Expr f(double v) { return ir::make_const(kF, v); }

struct Axis {
  int64_t size;
  std::string padding;
  bool align;

  // The pixel coordinate of a grid value g in [-1, 1].
  Expr unnormalize(Expr g) const {
    double n = static_cast<double>(size);
    if (align) return (g + f(1)) * f((n - 1) / 2);
    return ((g + f(1)) * f(n) - f(1)) / f(2);
  }
  // Mirror x into [twice_low / 2, twice_high / 2].
  static Expr reflect(Expr x, double twice_low, double twice_high) {
    if (twice_low == twice_high) return f(0);
    double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
    Expr in = ir::abs(x - f(lo));
    Expr flips = ir::floor(in / f(span));
    Expr extra = in - flips * f(span);
    Expr odd = ir::cast(DataType::Int(32), flips) % 2;
    return ir::select(ir::eq(odd, ir::make_const(DataType::Int(32), 0)), extra + f(lo), f(span) - extra + f(lo));
  }
  // The coordinate after border or reflection padding (zeros: as it is).
  Expr pad(Expr x) const {
    double hi = static_cast<double>(size - 1);
    if (padding == "border") return ir::min(ir::max(x, f(0)), f(hi));
    if (padding == "reflection") {
      Expr r = align ? reflect(x, 0, 2 * hi) : reflect(x, -1, 2 * static_cast<double>(size) - 1);
      return ir::min(ir::max(r, f(0)), f(hi));
    }
    return x;
  }
  Expr in_bounds(Expr i) const {
    return i >= ir::make_const(i.dtype(), 0) && i < ir::make_const(i.dtype(), static_cast<double>(size));
  }
  Expr clamp(Expr i) const { return ir::min(ir::max(i, 0), static_cast<int>(size - 1)); }
};

// The cubic convolution weights of the taps at -1, 0, 1, 2 for a fraction t.
std::array<Expr, 4> cubic_weights(Expr t) {
  const double a = -0.75;
  auto near = [&](Expr x) { return ((f(a + 2) * x - f(a + 3)) * x * x) + f(1); };          // |x| <= 1
  auto far = [&](Expr x) { return ((f(a) * x - f(5 * a)) * x + f(8 * a)) * x - f(4 * a); };  // 1 < |x| < 2
  return {far(t + f(1)), near(t), near(f(1) - t), far(f(2) - t)};
}

void register_grid_sample() {
  reg({"grid_sample", OpPattern::Injective, 2, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         const TensorType &x = in[0], &g = in[1];
         if (x.ndim() != 4) fail("grid_sample takes 4-d NCHW data, not " + x.to_string());
         if (g.ndim() != 4 || g.shape[3] != 2 || g.shape[0] != x.shape[0])
           fail(fmt::format("the grid is {}: [{}, Ho, Wo, 2] expected", g.to_string(), x.shape[0]));
         if (!x.dtype.is_float() || !g.dtype.is_float()) fail("grid_sample takes float data and grid");
         std::string mode = a.get_string("mode", "bilinear"), padding = a.get_string("padding", "zeros");
         if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
           fail("mode '" + mode + "' is not one of bilinear, nearest, bicubic");
         if (padding != "zeros" && padding != "border" && padding != "reflection")
           fail("padding_mode '" + padding + "' is not one of zeros, border, reflection");
         return TensorType{x.dtype, {x.shape[0], x.shape[1], g.shape[1], g.shape[2]}};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         TensorType xt = type_of(in[0]);
         std::string mode = a.get_string("mode", "bilinear"), padding = a.get_string("padding", "zeros");
         bool align = a.get_int("align_corners", 0) != 0;
         Axis ax{xt.shape[3], padding, align}, ay{xt.shape[2], padding, align};
         return te::compute(
             te_shape(out),
             [&](const std::vector<Var>& i) {
               Expr n = i[0], ch = i[1], h = i[2], w = i[3];
               Expr gx = ir::cast(kF, in[1]({n, h, w, ir::make_const(DataType::Int(32), 0)}));
               Expr gy = ir::cast(kF, in[1]({n, h, w, ir::make_const(DataType::Int(32), 1)}));
               Expr x = ax.unnormalize(gx), y = ay.unnormalize(gy);
               // The pixel (yi, xi) or 0 outside the image.
               auto pixel = [&](Expr yi, Expr xi) {
                 Expr v = ir::cast(kF, in[0]({n, ch, ay.clamp(yi), ax.clamp(xi)}));
                 return ir::select(ay.in_bounds(yi) && ax.in_bounds(xi), v, f(0));
               };
               auto to_int = [](Expr v) { return ir::cast(DataType::Int(32), v); };
               Expr acc;
               if (mode == "nearest") {
                 acc = pixel(to_int(ir::round(ay.pad(y))), to_int(ir::round(ax.pad(x))));
               } else if (mode == "bilinear") {
                 x = ax.pad(x);
                 y = ay.pad(y);
                 Expr x0 = ir::floor(x), y0 = ir::floor(y), tx = x - x0, ty = y - y0;
                 Expr xi = to_int(x0), yi = to_int(y0);
                 acc = pixel(yi, xi) * (f(1) - tx) * (f(1) - ty) + pixel(yi, xi + 1) * tx * (f(1) - ty) +
                       pixel(yi + 1, xi) * (f(1) - tx) * ty + pixel(yi + 1, xi + 1) * tx * ty;
               } else {
                 Expr x0 = ir::floor(x), y0 = ir::floor(y);
                 auto wx = cubic_weights(x - x0), wy = cubic_weights(y - y0);
                 for (int r = 0; r < 4; ++r) {
                   Expr row;
                   for (int k = 0; k < 4; ++k) {
                     Expr xi = to_int(ax.pad(x0 + f(k - 1))), yi = to_int(ay.pad(y0 + f(r - 1)));
                     Expr term = pixel(yi, xi) * wx[k];
                     row = row.defined() ? row + term : term;
                   }
                   acc = acc.defined() ? acc + row * wy[r] : row * wy[r];
                 }
               }
               return ir::cast(out.dtype, acc);
             },
             "grid_sample", "injective");
       }});
}

}  // namespace

void register_image_ops() { register_grid_sample(); }

}  // namespace kiln::graph::detail
