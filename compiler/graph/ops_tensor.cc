// Index-computing operators beyond ops.cc.
//
// | op | inputs | attributes | pattern |
// |---|---|---|---|
// | cumsum | x | axis, exclusive, reverse | opaque |
// | trilu | x (rank >= 2) | upper, k | injective |
// | tile | x | reps (one per dimension) | injective |
// | gather_elements | data, indices (same rank) | axis | injective |
// | resize | x | sizes (output shape), scales, mode (nearest, linear, cubic), coord (ONNX's coordinate_transformation_mode), nearest (ONNX's nearest_mode), cubic_a, exclude_outside, roi (tf_crop_and_resize: starts, ends), extrapolation | injective |
#include <fmt/format.h>

#include "compiler/graph/op_util.h"
#include "compiler/ir/op.h"

namespace kiln::graph::detail {

using ir::Expr;
using ir::Var;
using te::Tensor;

namespace {

void register_cumsum() {
  reg({"cumsum", OpPattern::Opaque, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         normalize_axis(a.get_int("axis", 0), in[0].ndim());
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         int axis = out.shape.empty() ? 0 : normalize_axis(a.get_int("axis", 0), out.ndim());
         bool exclusive = a.get_int("exclusive", 0) != 0, reverse = a.get_int("reverse", 0) != 0;
         std::vector<Expr> shape = te_shape(out);
         ir::IterVar k = te::reduce_axis(shape[axis], "k");
         return te::compute(shape,
                            [&](const std::vector<Var>& i) {
                              std::vector<Expr> idx = as_exprs(i);
                              idx[axis] = k->var;
                              Expr kv = k->var, iv = i[axis];
                              Expr cond = reverse ? (exclusive ? kv > iv : kv >= iv) : (exclusive ? kv < iv : kv <= iv);
                              return te::sum(in[0](idx), {k}, cond);
                            },
                            "cumsum", "reduce");
       }});
}

void register_trilu() {
  reg({"trilu", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs&) {
         if (in[0].ndim() < 2) fail("trilu needs a rank of at least 2");
         return in[0];
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         bool upper = a.get_int("upper", 1) != 0;
         int k = static_cast<int>(a.get_int("k", 0));
         int n = out.ndim();
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              Expr d = Expr(i[n - 1]) - Expr(i[n - 2]);  // column - row
                              Expr keep = upper ? d >= k : d <= k;
                              return ir::select(keep, in[0](as_exprs(i)), ir::make_const(out.dtype, 0));
                            },
                            "trilu", "injective");
       }});
}

void register_tile() {
  reg({"tile", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         auto reps = a.get_ints("reps");
         if (static_cast<int>(reps.size()) != in[0].ndim()) fail("repeats need one entry per dimension");
         TensorType out = in[0];
         for (size_t d = 0; d < reps.size(); ++d) {
           if (reps[d] < 1) fail(fmt::format("repeat {} of dimension {} is not positive", reps[d], d));
           out.shape[d] *= reps[d];
         }
         return out;
       },
       [](const std::vector<Tensor>& in, const Attrs&, const TensorType& out) {
         TensorType x = type_of(in[0]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              if (x.shape.empty()) return in[0]({Expr(0)});
                              std::vector<Expr> idx;
                              for (size_t d = 0; d < x.shape.size(); ++d)
                                idx.push_back(x.shape[d] == 1 ? Expr(0) : Expr(i[d]) % static_cast<int>(x.shape[d]));
                              return in[0](idx);
                            },
                            "tile", "injective");
       }});
}

void register_gather_elements() {
  reg({"gather_elements", OpPattern::Injective, 2, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         if (in[0].ndim() == 0) fail("gather_elements needs a rank of at least 1");
         normalize_axis(a.get_int("axis", 0), in[0].ndim());
         if (!in[1].dtype.is_integer()) fail("indices must be integers");
         if (in[1].ndim() != in[0].ndim()) fail("data and indices differ in rank");
         return TensorType{in[0].dtype, in[1].shape};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         TensorType x = type_of(in[0]);
         int axis = normalize_axis(a.get_int("axis", 0), x.ndim());
         int dim = static_cast<int>(x.shape[axis]);
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              Expr k = ir::cast(DataType::Int(32), in[1](as_exprs(i)));
                              k = ir::min(ir::max(ir::select(k < 0, k + dim, k), 0), dim - 1);
                              std::vector<Expr> idx = as_exprs(i);
                              idx[axis] = k;
                              return in[0](idx);
                            },
                            "gather_elements", "injective");
       }});
}

// The input coordinate (float64) of output index i along a dimension, as ONNX's
// coordinate_transformation_mode says; ONNX's resized length is in * scale, unrounded.
// roi0, roi1: the crop of tf_crop_and_resize, as fractions of the input.
Expr source_coord(const std::string& mode, Expr i, double scale, int64_t in, int64_t out_len, double roi0, double roi1) {
  double out = static_cast<double>(in) * scale;
  DataType f = DataType::Float(64);
  auto k = [&](double v) { return ir::make_const(f, v); };
  Expr x = ir::cast(f, i);
  double last = static_cast<double>(in - 1);
  if (mode == "asymmetric") return x / k(scale);
  if (mode == "align_corners") return out == 1 ? k(0) : x * k(last / (out - 1));
  if (mode == "tf_half_pixel_for_nn") return (x + k(0.5)) / k(scale);
  if (mode == "pytorch_half_pixel" && out <= 1) return k(0);
  if (mode == "half_pixel" || mode == "pytorch_half_pixel") return (x + k(0.5)) / k(scale) - k(0.5);
  if (mode == "half_pixel_symmetric") {
    // Opset 19: half_pixel, shifted so that the resized image's center stays the input's
    // where the output length was rounded down from in * scale.
    double offset = static_cast<double>(in) / 2 * (1 - static_cast<double>(out_len) / out);
    return k(offset) + (x + k(0.5)) / k(scale) - k(0.5);
  }
  if (mode == "tf_crop_and_resize") {
    if (out == 1) return k((roi1 - roi0) * last / 2 + roi0 * last);
    return x * k((roi1 - roi0) * last / (out - 1)) + k(roi0 * last);
  }
  fail("coordinate_transformation_mode '" + mode + "' is not supported");
}

Expr clamp_index(Expr v, int64_t n) { return ir::min(ir::max(v, 0), static_cast<int>(n - 1)); }

Expr nearest_index(const std::string& mode, Expr x, int64_t n) {
  DataType f = DataType::Float(64);
  Expr r;
  if (mode == "round_prefer_floor") r = ir::ceil(x - ir::make_const(f, 0.5));
  else if (mode == "round_prefer_ceil") r = ir::floor(x + ir::make_const(f, 0.5));
  else if (mode == "floor") r = ir::floor(x);
  else if (mode == "ceil") r = ir::ceil(x);
  else fail("nearest_mode '" + mode + "' is not supported");
  return clamp_index(ir::cast(DataType::Int(32), r), n);
}

// One input position an output element reads along a dimension and its weight.
struct Tap {
  Expr index, weight;
};

// The taps of linear (2) or cubic (4, Keys' kernel with coefficient a) interpolation at
// coordinate x of a dimension of length n: edge values outside, or with exclude_outside
// the outside taps weigh 0 and the others are renormalized.
std::vector<Tap> interpolation_taps(const std::string& mode, Expr x, int64_t n, double a, bool exclude_outside) {
  DataType f = DataType::Float(64);
  auto k = [&](double v) { return ir::make_const(f, v); };
  Expr lo = ir::floor(x), t = x - lo;
  Expr base = ir::cast(DataType::Int(32), lo);
  std::vector<std::pair<int, Expr>> w;  // offset from floor(x), weight
  if (mode == "linear") {
    w = {{0, k(1) - t}, {1, t}};
  } else {
    // Keys: |s| <= 1: (a+2)|s|^3 - (a+3)|s|^2 + 1; 1 < |s| < 2: a|s|^3 - 5a|s|^2 + 8a|s| - 4a.
    auto near = [&](Expr s) { return ((k(a + 2) * s - k(a + 3)) * s) * s + k(1); };
    auto far = [&](Expr s) { return ((k(a) * s - k(5 * a)) * s + k(8 * a)) * s - k(4 * a); };
    w = {{-1, far(t + k(1))}, {0, near(t)}, {1, near(k(1) - t)}, {2, far(k(2) - t)}};
  }
  std::vector<Tap> taps;
  Expr total;
  for (auto& [off, weight] : w) {
    Expr i = base + off;
    if (exclude_outside) weight = ir::select(i >= 0 && i < static_cast<int>(n), weight, k(0));
    total = total.defined() ? total + weight : weight;
    taps.push_back({clamp_index(i, n), weight});
  }
  if (exclude_outside)
    for (Tap& tap : taps) tap.weight = tap.weight / total;
  return taps;
}

void register_resize() {
  reg({"resize", OpPattern::Injective, 1, 0,
       [](const std::vector<TensorType>& in, const Attrs& a) {
         auto sizes = a.get_ints("sizes");
         auto scales = a.get_floats("scales");
         if (static_cast<int>(sizes.size()) != in[0].ndim() || scales.size() != sizes.size())
           fail("sizes and scales need one entry per dimension");
         std::string mode = a.get_string("mode", "nearest");
         if (mode != "nearest" && mode != "linear" && mode != "cubic")
           fail("resize mode '" + mode + "' is not supported (nearest, linear, cubic)");
         if (a.get_string("coord", "half_pixel") == "tf_crop_and_resize" && a.get_floats("roi", {}).size() != 2 * sizes.size())
           fail("tf_crop_and_resize needs a roi of a start and an end per dimension");
         for (int64_t d : sizes)
           if (d <= 0) fail("the output size must be positive");
         return TensorType{in[0].dtype, sizes};
       },
       [](const std::vector<Tensor>& in, const Attrs& a, const TensorType& out) {
         TensorType xt = type_of(in[0]);
         auto scales = a.get_floats("scales");
         std::string mode = a.get_string("mode", "nearest"), coord = a.get_string("coord", "half_pixel");
         std::string nearest = a.get_string("nearest", "round_prefer_floor");
         double cubic_a = a.get_float("cubic_a", -0.75), extrapolation = a.get_float("extrapolation", 0.0);
         bool exclude_outside = a.get_int("exclude_outside", 0) != 0, crop = coord == "tf_crop_and_resize";
         int n = xt.ndim();
         std::vector<double> roi = a.get_floats("roi", {});
         if (roi.empty()) roi.resize(2 * static_cast<size_t>(n), 0.0);
         // The dimensions that change: the others are read at the same index.
         std::vector<int> resized;
         for (int d = 0; d < n; ++d)
           if (xt.shape[d] != out.shape[d] || scales[d] != 1.0 || (crop && (roi[d] != 0 || roi[d + n] != 1))) resized.push_back(d);
         if (mode != "nearest" && resized.size() > 3) fail(mode + " resize of more than 3 dimensions is not supported");
         return te::compute(te_shape(out),
                            [&](const std::vector<Var>& i) {
                              std::vector<Expr> base = as_exprs(i);
                              std::vector<Expr> coords(n);
                              Expr outside;  // tf_crop_and_resize: a coordinate outside the input
                              DataType f = DataType::Float(64);
                              for (int d : resized) {
                                coords[d] = source_coord(coord, i[d], scales[d], xt.shape[d], out.shape[d], roi[d], roi[d + n]);
                                if (!crop) continue;
                                Expr o = coords[d] < ir::make_const(f, 0) || coords[d] > ir::make_const(f, static_cast<double>(xt.shape[d] - 1));
                                outside = outside.defined() ? outside || o : o;
                              }
                              auto extrapolated = [&](Expr v) {
                                return outside.defined() ? ir::select(outside, ir::make_const(out.dtype, extrapolation), v) : v;
                              };
                              if (mode == "nearest") {
                                for (int d : resized) base[d] = nearest_index(nearest, coords[d], xt.shape[d]);
                                return extrapolated(in[0](base));
                              }
                              std::vector<std::vector<Tap>> taps;
                              for (int d : resized)
                                taps.push_back(interpolation_taps(mode, coords[d], xt.shape[d], cubic_a, exclude_outside));
                              // Every combination of one tap per resized dimension.
                              Expr acc;
                              std::vector<size_t> pick(resized.size(), 0);
                              for (bool more = true; more;) {
                                std::vector<Expr> idx = base;
                                Expr w = ir::make_const(f, 1.0);
                                for (size_t r = 0; r < resized.size(); ++r) {
                                  idx[resized[r]] = taps[r][pick[r]].index;
                                  w = w * taps[r][pick[r]].weight;
                                }
                                Expr term = w * ir::cast(f, in[0](idx));
                                acc = acc.defined() ? acc + term : term;
                                more = false;
                                for (size_t r = 0; r < resized.size() && !more; ++r) {
                                  more = ++pick[r] < taps[r].size();
                                  if (!more) pick[r] = 0;
                                }
                              }
                              return extrapolated(ir::cast(out.dtype, acc));
                            },
                            "resize", "injective");
       }});
}

}  // namespace

void register_tensor_ops() {
  register_resize();
  register_cumsum();
  register_trilu();
  register_tile();
  register_gather_elements();
}

}  // namespace kiln::graph::detail
