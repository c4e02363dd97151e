// Sampling an image at computed coordinates.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | grid_sample | x [N, C, H, W], grid [N, Ho, Wo, 2] (x, y in [-1, 1]) | mode (bilinear, nearest, bicubic), padding (zeros, border, reflection), align_corners | injective |
// | roi_align | x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] | output_height, output_width, sampling_ratio (1-8), spatial_scale, mode (avg, max), half_pixel | injective |
//
// grid_sample is ONNX's GridSample (opset 16), which is PyTorch's grid_sampler_2d:
// a grid value -1 is the left edge of the first pixel (align_corners 0) or its centre
// (align_corners 1); out-of-range taps read 0 (zeros), the nearest edge (border) or
// the mirror image (reflection); nearest rounds half to even; bicubic uses the cubic
// convolution coefficients with A = -0.75, each of its 16 taps padded on its own.
//
// roi_align is ONNX's RoiAlign (opset 16): each output bin of a region averages (or
// takes the largest of) sampling_ratio x sampling_ratio bilinear samples; a region's
// corners are scaled by spatial_scale and shifted by half a pixel (half_pixel), or its
// size is at least 1 (output_half_pixel, the opset 10 behaviour). An adaptive sample
// count (sampling_ratio 0) depends on the regions' values and is refused.
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

void register_roi_align() {
  reg({"roi_align", OpPattern::Injective, 3, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         const TensorType &x = in[0], &rois = in[1], &idx = in[2];
         if (x.ndim() != 4) fail("roi_align takes 4-d NCHW data, not " + x.to_string());
         if (rois.ndim() != 2 || rois.shape[1] != 4) fail("the regions are " + rois.to_string() + ": [R, 4] expected");
         if (idx.ndim() != 1 || idx.shape[0] != rois.shape[0] || !idx.dtype.is_integer())
           fail(fmt::format("batch_indices is {}: [{}] integers expected", idx.to_string(), rois.shape[0]));
         int64_t oh = a.get_int("output_height", 1), ow = a.get_int("output_width", 1);
         int64_t ratio = a.get_int("sampling_ratio", 0);
         if (oh < 1 || ow < 1) fail("output_height and output_width must be positive");
         if (ratio < 1 || ratio > 8)
           fail(fmt::format("sampling_ratio {} is not supported (1 to 8; 0, adaptive, depends on the regions' values)", ratio));
         std::string mode = a.get_string("mode", "avg");
         if (mode != "avg" && mode != "max") fail("mode '" + mode + "' is not one of avg, max");
         return TensorType{x.dtype, {rois.shape[0], x.shape[1], oh, ow}};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         TensorType xt = type_of(in[0]);
         int64_t H = xt.shape[2], W = xt.shape[3], oh = out.shape[2], ow = out.shape[3];
         int ratio = static_cast<int>(a.get_int("sampling_ratio", 0));
         double scale = a.get_float("spatial_scale", 1.0);
         bool half_pixel = a.get_int("half_pixel", 1) != 0, max_mode = a.get_string("mode", "avg") == "max";
         return te::compute(
             te_shape(out),
             [&](const std::vector<Var>& i) {
               Expr r = i[0], ch = i[1], ph = ir::cast(kF, i[2]), pw = ir::cast(kF, i[3]);
               auto roi = [&](int k) { return ir::cast(kF, in[1]({r, ir::make_const(DataType::Int(32), k)})) * f(scale); };
               // A batch index out of range is clamped (memory safety; the value is the caller's).
               Expr n = ir::min(ir::max(ir::cast(DataType::Int(32), in[2]({r})), 0), static_cast<int>(xt.shape[0] - 1));
               double off = half_pixel ? 0.5 : 0.0;
               Expr x0 = roi(0) - f(off), y0 = roi(1) - f(off);
               Expr rw = roi(2) - f(off) - x0, rh = roi(3) - f(off) - y0;
               if (!half_pixel) {
                 rw = ir::max(rw, f(1));
                 rh = ir::max(rh, f(1));
               }
               Expr bw = rw / f(static_cast<double>(ow)), bh = rh / f(static_cast<double>(oh));
               // One bilinear sample; 0 more than a pixel outside the image.
               auto sample = [&](Expr y, Expr x) {
                 Expr outside = y < f(-1) || y > f(static_cast<double>(H)) || x < f(-1) || x > f(static_cast<double>(W));
                 y = ir::max(y, f(0));
                 x = ir::max(x, f(0));
                 auto low = [](Expr v, int64_t size) {
                   return ir::min(ir::cast(DataType::Int(32), ir::floor(v)), static_cast<int>(size - 1));
                 };
                 Expr yl = low(y, H), xl = low(x, W);
                 Expr yh = ir::min(yl + 1, static_cast<int>(H - 1)), xh = ir::min(xl + 1, static_cast<int>(W - 1));
                 // At the last row (column) the sample sits on it.
                 y = ir::select(yl >= static_cast<int>(H - 1), ir::cast(kF, yl), y);
                 x = ir::select(xl >= static_cast<int>(W - 1), ir::cast(kF, xl), x);
                 Expr ly = y - ir::cast(kF, yl), lx = x - ir::cast(kF, xl), hy = f(1) - ly, hx = f(1) - lx;
                 auto px = [&](Expr yy, Expr xx) { return ir::cast(kF, in[0]({n, ch, yy, xx})); };
                 std::array<Expr, 4> terms = {hy * hx * px(yl, xl), hy * lx * px(yl, xh), ly * hx * px(yh, xl),
                                              ly * lx * px(yh, xh)};
                 if (max_mode) {
                   Expr m = ir::max(ir::max(terms[0], terms[1]), ir::max(terms[2], terms[3]));
                   return ir::select(outside, f(0), m);
                 }
                 return ir::select(outside, f(0), terms[0] + terms[1] + terms[2] + terms[3]);
               };
               Expr acc;
               for (int iy = 0; iy < ratio; ++iy)
                 for (int ix = 0; ix < ratio; ++ix) {
                   Expr y = y0 + ph * bh + f((iy + 0.5) / ratio) * bh;
                   Expr x = x0 + pw * bw + f((ix + 0.5) / ratio) * bw;
                   Expr v = sample(y, x);
                   acc = !acc.defined() ? v : max_mode ? ir::max(acc, v) : acc + v;
                 }
               if (!max_mode) acc = acc / f(static_cast<double>(ratio * ratio));
               return ir::cast(out.dtype, acc);
             },
             "roi_align", "injective");
       }});
}

}  // namespace

void register_image_ops() {
  register_grid_sample();
  register_roi_align();
}

}  // namespace kiln::graph::detail
