// Converters of ONNX's tensor-manipulating and normalization operators beyond
// onnx_importer.cc: CumSum, Trilu, Tile, GatherElements, Range, DepthToSpace,
// SpaceToDepth, Size, NonZero (of constants), GlobalMaxPool, InstanceNormalization,
// Resize, GridSample, RoiAlign.
#include <fmt/format.h>

#include <cmath>

#include "compiler/frontend/onnx/importer.h"

namespace kiln::frontend {

namespace {

// The single integer of constant input k.
int64_t const_scalar(Importer& c, int k) {
  std::vector<int64_t> v = c.const_ints(k);
  if (v.size() != 1) fail(fmt::format("input {} must hold one value, it holds {}", k, v.size()));
  return v[0];
}

std::vector<NodeId> cumsum(Importer& c) {
  Attrs a{{"axis", const_scalar(c, 1)}, {"exclusive", c.attr_int("exclusive", 0)}, {"reverse", c.attr_int("reverse", 0)}};
  return {c.op("cumsum", {c.in(0)}, a)};
}

std::vector<NodeId> trilu(Importer& c) {
  int64_t k = c.has_input(1) ? const_scalar(c, 1) : 0;
  return {c.op("trilu", {c.in(0)}, {{"upper", c.attr_int("upper", 1)}, {"k", k}})};
}

std::vector<NodeId> tile(Importer& c) { return {c.op("tile", {c.in(0)}, {{"reps", c.const_ints(1)}})}; }

std::vector<NodeId> gather_elements(Importer& c) {
  return {c.op("gather_elements", {c.in(0), c.in(1)}, {{"axis", c.attr_int("axis", 0)}})};
}

// Range of constant operands is a constant: its length decides the output shape. It is
// made now, so it is no longer than the importer folds.
std::vector<NodeId> range(Importer& c) {
  double start = c.const_value(0, "start"), limit = c.const_value(1, "limit"), delta = c.const_value(2, "delta");
  if (delta == 0) fail("delta is zero");
  DataType t = c.in_type(0).dtype;
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= static_cast<double>(kFoldLimit)))  // NaN and infinite bounds too
    fail(fmt::format("the output would have {} elements, more than the {} Kiln makes while importing", count, kFoldLimit));
  auto n = static_cast<int64_t>(count);
  if (!t.is_float()) {
    // Exactly, in integers: a double holds an int64 bound to 53 bits only. Each element
    // lies between start and limit, so it fits; the product is formed in 128 bits.
    __int128 s = c.const_ints(0)[0], l = c.const_ints(1)[0], d = c.const_ints(2)[0];
    __int128 span = d > 0 ? l - s : s - l, step = d > 0 ? d : -d;
    n = span > 0 ? static_cast<int64_t>((span + step - 1) / step) : 0;
    if (n > kFoldLimit)
      fail(fmt::format("the output would have {} elements, more than the {} Kiln makes while importing", n, kFoldLimit));
    auto b = std::make_shared<interp::HostBuffer>(t, std::vector<int64_t>{n});
    for (int64_t i = 0; i < n; ++i) b->set_int(i, static_cast<int64_t>(s + i * d));
    return {c.constant(b)};
  }
  auto b = std::make_shared<interp::HostBuffer>(t, std::vector<int64_t>{n});
  for (int64_t i = 0; i < n; ++i) b->set(i, start + static_cast<double>(i) * delta);
  return {c.constant(b)};
}

// NonZero's output shape is its data's count of non-zeros, so its input must be known
// while compiling (PyTorch's opset 9 exports arange(n) as NonZero(ones(n))): the
// indices, [rank, count] int64, become a constant.
std::vector<NodeId> non_zero(Importer& c) {
  const graph::Node& x = c.const_input(0);
  const interp::HostBuffer& b = *x.value;
  const std::vector<int64_t>& shape = b.shape();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < b.size(); ++i)
    if (b.get(i) != 0) hits.push_back(i);
  auto rank = static_cast<int64_t>(shape.size());
  if (rank == 0) fail("NonZero of a scalar (its result has no rows)");
  if (hits.empty()) fail("NonZero of a constant with no non-zero element (an empty result)");
  auto out = std::make_shared<interp::HostBuffer>(DataType::Int(64),
                                                  std::vector<int64_t>{rank, static_cast<int64_t>(hits.size())});
  for (size_t k = 0; k < hits.size(); ++k) {
    int64_t flat = hits[k];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out->set_int(d * static_cast<int64_t>(hits.size()) + static_cast<int64_t>(k), flat % shape[static_cast<size_t>(d)]);
      flat /= shape[static_cast<size_t>(d)];
    }
  }
  return {c.constant(out)};
}

std::vector<int64_t> nchw(Importer& c, const char* what) {
  std::vector<int64_t> s = c.in_type(0).shape;
  if (s.size() != 4) fail(fmt::format("{} takes 4-d NCHW data, got {}", what, c.in_type(0).to_string()));
  return s;
}

std::vector<NodeId> depth_to_space(Importer& c) {
  std::vector<int64_t> s = nchw(c, "DepthToSpace");
  int64_t b = c.attr_int("blocksize", 0);
  if (b <= 0 || s[1] % (b * b)) fail(fmt::format("blocksize {} does not divide the {} channels into blocks", b, s[1]));
  bool crd = c.attr_string("mode", "DCR") == "CRD";
  int64_t n = s[0], ch = s[1] / (b * b), h = s[2], w = s[3];
  NodeId x = crd ? c.reshape(c.in(0), {n, ch, b, b, h, w}) : c.reshape(c.in(0), {n, b, b, ch, h, w});
  std::vector<int64_t> perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  x = c.op("transpose", {x}, {{"perm", perm}});
  return {c.reshape(x, {n, ch, h * b, w * b})};
}

std::vector<NodeId> space_to_depth(Importer& c) {
  std::vector<int64_t> s = nchw(c, "SpaceToDepth");
  int64_t b = c.attr_int("blocksize", 0);
  if (b <= 0 || s[2] % b || s[3] % b) fail(fmt::format("blocksize {} does not divide the spatial size", b));
  int64_t n = s[0], ch = s[1], h = s[2] / b, w = s[3] / b;
  NodeId x = c.reshape(c.in(0), {n, ch, h, b, w, b});
  x = c.op("transpose", {x}, {{"perm", std::vector<int64_t>{0, 3, 5, 1, 2, 4}}});
  return {c.reshape(x, {n, ch * b * b, h, w})};
}

std::vector<NodeId> size(Importer& c) {
  auto b = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::vector<int64_t>{});
  b->set_int(0, c.in_type(0).size());
  return {c.constant(b)};
}

std::vector<int64_t> spatial_axes(Importer& c) {
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < c.in_type(0).ndim(); ++d) axes.push_back(d);
  if (axes.empty()) fail("the input needs spatial dimensions after N and C");
  return axes;
}

std::vector<NodeId> global_max_pool(Importer& c) {
  return {c.op("max", {c.in(0)}, {{"axes", spatial_axes(c)}, {"keepdims", int64_t{1}}})};
}

// (x - mean) / sqrt(var + epsilon) * scale + bias, per sample and channel.
std::vector<NodeId> instance_norm(Importer& c) {
  std::vector<int64_t> axes = spatial_axes(c);
  TensorType t = c.in_type(0);  // a copy: adding nodes moves the graph's types
  NodeId x = c.in(0);
  Attrs mean_attrs{{"axes", axes}, {"keepdims", int64_t{1}}};
  NodeId d = c.op("subtract", {x, c.op("mean", {x}, mean_attrs)});
  NodeId var = c.op("mean", {c.op("multiply", {d, d})}, mean_attrs);
  NodeId den = c.op("sqrt", {c.op("add", {var, c.scalar(t.dtype, c.attr_float("epsilon", 1e-5))})});
  std::vector<int64_t> cshape(t.shape.size() - 1, 1);
  cshape[0] = t.shape[1];
  NodeId y = c.op("multiply", {c.op("divide", {d, den}), c.reshape(c.in(1), cshape)});
  return {c.op("add", {y, c.reshape(c.in(2), cshape)})};
}

// GroupNormalization (opsets 18 and 21): x [N, C, ...] normalized over each group of
// C / num_groups channels and the spatial positions; scale and bias per group at
// opset 18, per channel from 21.
std::vector<NodeId> group_norm(Importer& c) {
  TensorType t = c.in_type(0);  // a copy: adding nodes moves the graph's types
  if (t.ndim() < 2) fail("GroupNormalization takes data of rank 2 or more (N, C, ...)");
  const int64_t groups = c.attr_int("num_groups", 0), channels = t.shape[1];
  if (groups <= 0 || channels % groups != 0)
    fail(fmt::format("num_groups {} does not divide the {} channels", groups, channels));
  if (t.size() == 0) fail("GroupNormalization of an empty tensor");
  const int64_t per_scale = c.opset() >= 21 ? channels : groups;
  for (int k : {1, 2})
    if (c.in_type(k).size() != per_scale)
      fail(fmt::format("{} has {} values; opset {} takes one per {} ({})", k == 1 ? "scale" : "bias", c.in_type(k).size(),
                       c.opset(), c.opset() >= 21 ? "channel" : "group", per_scale));
  const int64_t rest = t.size() / (t.shape[0] * groups);
  NodeId x = c.reshape(c.in(0), {t.shape[0], groups, rest});
  Attrs mean_attrs{{"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t{1}}};
  NodeId d = c.op("subtract", {x, c.op("mean", {x}, mean_attrs)});
  NodeId var = c.op("mean", {c.op("multiply", {d, d})}, mean_attrs);
  NodeId den = c.op("sqrt", {c.op("add", {var, c.scalar(t.dtype, c.attr_float("epsilon", 1e-5))})});
  NodeId y = c.op("divide", {d, den});
  if (per_scale == groups) {
    y = c.op("add", {c.op("multiply", {y, c.reshape(c.in(1), {groups, 1})}), c.reshape(c.in(2), {groups, 1})});
    return {c.reshape(y, t.shape)};
  }
  std::vector<int64_t> cshape(t.shape.size() - 1, 1);
  cshape[0] = channels;
  y = c.reshape(y, t.shape);
  return {c.op("add", {c.op("multiply", {y, c.reshape(c.in(1), cshape)}), c.reshape(c.in(2), cshape)})};
}

// Resize's attributes of opset 18: `axes` (scales or sizes for those axes only, the
// others 1 or their length), keep_aspect_ratio_policy (sizes as bounds: one scale for
// all the axes, the smallest for not_larger, the largest for not_smaller) and
// antialias (a low-pass filter when downsampling by linear or cubic: refused). True
// where the policy set both the sizes and the scales (the one scale on its axes).
bool resize18(Importer& c, const TensorType& x, std::vector<double>& scales, std::vector<int64_t>& sizes) {
  const int n = x.ndim();
  bool both = false;
  std::vector<int64_t> axes = c.attr_ints("axes", {});
  if (!axes.empty()) {
    std::vector<bool> seen(static_cast<size_t>(n), false);
    for (int64_t& a : axes) {
      if (a < 0) a += n;
      if (a < 0 || a >= n || seen[static_cast<size_t>(a)])
        fail(fmt::format("axes [{}] are not distinct axes of rank {}", fmt::join(c.attr_ints("axes", {}), ", "), n));
      seen[static_cast<size_t>(a)] = true;
    }
    auto spread = [&](auto& v, auto other) {
      if (v.empty()) return;
      if (v.size() != axes.size()) fail(fmt::format("{} values for {} axes", v.size(), axes.size()));
      auto given = v;
      v.clear();
      for (int d = 0; d < n; ++d) v.push_back(other(d));
      for (size_t k = 0; k < axes.size(); ++k) v[static_cast<size_t>(axes[k])] = given[k];
    };
    spread(scales, [](int) { return 1.0; });
    spread(sizes, [&](int d) { return x.shape[static_cast<size_t>(d)]; });
  } else {
    for (int d = 0; d < n; ++d) axes.push_back(d);
  }
  std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && !sizes.empty()) {
    if (sizes.size() != static_cast<size_t>(n)) fail(fmt::format("sizes has {} entries for rank {}", sizes.size(), n));
    if (policy != "not_larger" && policy != "not_smaller")
      fail("keep_aspect_ratio_policy '" + policy + "' is not one of stretch, not_larger, not_smaller");
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (int64_t a : axes) {
      if (x.shape[static_cast<size_t>(a)] == 0) fail(fmt::format("{} cannot keep the aspect ratio of an empty axis {}", policy, a));
      double r = static_cast<double>(sizes[static_cast<size_t>(a)]) / static_cast<double>(x.shape[static_cast<size_t>(a)]);
      scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
    }
    scales.assign(static_cast<size_t>(n), 1.0);
    for (int64_t a : axes) {
      const auto k = static_cast<size_t>(a);
      const double len = std::round(scale * static_cast<double>(x.shape[k]));
      if (!(len >= 0 && len <= 0x1p40)) fail(fmt::format("{} makes axis {} {} long", policy, a, len));
      sizes[k] = static_cast<int64_t>(len);
      scales[k] = scale;
    }
    both = true;
  }
  return both;
}

// Resize (opset 10: X, scales; 11 on: X, roi, scales, sizes) and Upsample (X, scales).
std::vector<NodeId> resize(Importer& c) {
  TensorType x = c.in_type(0);
  bool v10 = c.node().op_type() == "Upsample" || c.opset() < 11;
  int scales_input = v10 ? 1 : 2;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (c.has_input(scales_input)) scales = graph::constant_values(c.const_input(scales_input));
  if (!v10 && c.has_input(3)) sizes = c.const_ints(3);
  size_t n = x.shape.size();
  const bool both = c.opset() >= 18 && resize18(c, x, scales, sizes);
  if (!both && !sizes.empty()) {
    if (sizes.size() != n) fail(fmt::format("sizes has {} entries for rank {}", sizes.size(), n));
    scales.clear();
    for (size_t d = 0; d < n; ++d) scales.push_back(static_cast<double>(sizes[d]) / static_cast<double>(x.shape[d]));
  } else if (!both) {
    if (scales.size() != n) fail(fmt::format("scales has {} entries for rank {} (and no sizes are given)", scales.size(), n));
    for (size_t d = 0; d < n; ++d) sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.shape[d]) * scales[d])));
  }
  std::string mode = c.attr_string("mode", "nearest");
  if (!v10 && c.opset() >= 18 && c.attr_int("antialias", 0) != 0 && mode != "nearest")
    for (size_t d = 0; d < n; ++d)
      if (sizes[d] < x.shape[d]) fail("antialias=1 when downsampling (" + mode + " mode) is not supported");
  std::string coord = v10 ? "asymmetric" : c.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string nearest = v10 ? "floor" : c.attr_string("nearest_mode", "round_prefer_floor");
  Attrs a{{"sizes", sizes}, {"scales", scales}, {"mode", mode}, {"coord", coord}, {"nearest", nearest}};
  if (!v10) {
    a.set("cubic_a", c.attr_float("cubic_coeff_a", -0.75));
    a.set("exclude_outside", c.attr_int("exclude_outside", 0));
  }
  if (coord == "tf_crop_and_resize") {
    std::vector<double> roi = c.has_input(1) ? graph::constant_values(c.const_input(1)) : std::vector<double>{};
    if (roi.size() != 2 * n) fail(fmt::format("tf_crop_and_resize needs a roi of {} values (starts, ends), it has {}", 2 * n, roi.size()));
    a.set("roi", roi);
    a.set("extrapolation", c.attr_float("extrapolation_value", 0.0));
  }
  return {c.op("resize", {c.in(0)}, a)};
}

// GridSample (opset 16): bilinear, nearest or bicubic sampling of NCHW data at a grid
// of [-1, 1] coordinates.
std::vector<NodeId> grid_sample(Importer& c) {
  // Opset 20 names the modes linear and cubic (for any rank; Kiln's op is 2-d).
  std::string mode = c.attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (c.opset() >= 20 && (mode == "linear" || mode == "cubic")) mode = mode == "linear" ? "bilinear" : "bicubic";
  Attrs a{{"mode", mode}, {"padding", c.attr_string("padding_mode", "zeros")},
          {"align_corners", c.attr_int("align_corners", 0)}};
  return {c.op("grid_sample", {c.in(0), c.in(1)}, a)};
}

// RoiAlign (opsets 10 and 16: coordinate_transformation_mode half_pixel, or
// output_half_pixel as opset 10 had it).
std::vector<NodeId> roi_align(Importer& c) {
  std::string coord = c.attr_string("coordinate_transformation_mode", c.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (coord != "half_pixel" && coord != "output_half_pixel")
    fail("coordinate_transformation_mode '" + coord + "' is not one of half_pixel, output_half_pixel");
  Attrs a{{"output_height", c.attr_int("output_height", 1)}, {"output_width", c.attr_int("output_width", 1)},
          {"sampling_ratio", c.attr_int("sampling_ratio", 0)}, {"spatial_scale", c.attr_float("spatial_scale", 1.0)},
          {"mode", c.attr_string("mode", "avg")}, {"half_pixel", int64_t{coord == "half_pixel"}}};
  return {c.op("roi_align", {c.in(0), c.in(1), c.in(2)}, a)};
}

// EyeLike: ones on the k-th diagonal of a matrix of the input's shape (a constant).
std::vector<NodeId> eye_like(Importer& c) {
  TensorType t = c.in_type(0);
  if (t.ndim() != 2) fail("EyeLike takes a 2-d input");
  DataType dt = c.has_attr("dtype") ? onnx_dtype(static_cast<int>(c.attr_int("dtype", 1))) : t.dtype;
  int64_t k = c.attr_int("k", 0);
  auto b = std::make_shared<interp::HostBuffer>(dt, t.shape);
  b->fill(0);
  for (int64_t i = 0; i < t.shape[0]; ++i)
    if (i + k >= 0 && i + k < t.shape[1]) b->set(i * t.shape[1] + i + k, 1);
  return {c.constant(b)};
}

// OneHot(indices, depth, values [off, on]): on where the index (negative from the end)
// equals the position along the new axis.
std::vector<NodeId> one_hot(Importer& c) {
  TensorType it = c.in_type(0);
  double d = c.const_value(1, "depth");
  if (!(d >= 1 && d <= 0x1p40)) fail(fmt::format("depth {} is not from 1 to 2^40", d));
  auto depth = static_cast<int64_t>(d);
  int64_t n = it.ndim() + 1, axis = c.attr_int("axis", -1);
  if (axis < 0) axis += n;
  if (axis < 0 || axis >= n) fail("axis out of range");
  NodeId idx = c.in(0);
  if (it.dtype != DataType::Int(64)) idx = c.op("cast", {idx}, {{"dtype", std::string("int64")}});
  NodeId dep = c.scalar(DataType::Int(64), static_cast<double>(depth));
  idx = c.op("where", {c.op("less", {idx, c.scalar(DataType::Int(64), 0)}), c.op("add", {idx, dep}), idx});
  std::vector<int64_t> ishape = it.shape;
  ishape.insert(ishape.begin() + axis, 1);
  idx = c.reshape(idx, ishape);
  std::vector<int64_t> pshape(static_cast<size_t>(n - axis), 1);
  pshape[0] = depth;
  auto pos = std::make_shared<interp::HostBuffer>(DataType::Int(64), pshape);
  for (int64_t i = 0; i < depth; ++i) pos->set_int(i, i);
  NodeId hit = c.op("equal", {idx, c.constant(pos, "_positions")});
  TensorType vt = c.in_type(2);
  if (vt.size() != 2) fail("values must hold [off, on]");
  NodeId vals = c.reshape(c.in(2), {2});
  auto pick = [&](int64_t k) {
    return c.reshape(c.op("strided_slice", {vals}, {{"begin", std::vector<int64_t>{k}}, {"end", std::vector<int64_t>{k + 1}}, {"steps", std::vector<int64_t>{1}}}), {});
  };
  return {c.op("where", {hit, pick(1), pick(0)})};
}

// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes` (default N, H, W).
std::vector<NodeId> mean_variance_norm(Importer& c) {
  std::vector<int64_t> axes = c.attr_ints("axes", {0, 2, 3});
  Attrs ma{{"axes", axes}, {"keepdims", int64_t{1}}};
  NodeId x = c.in(0);
  NodeId d = c.op("subtract", {x, c.op("mean", {x}, ma)});
  NodeId var = c.op("mean", {c.op("multiply", {d, d})}, ma);
  return {c.op("divide", {d, c.op("sqrt", {var})})};
}

}  // namespace

void add_tensor_converters(std::map<std::string, Converter>& m) {
  m["CumSum"] = cumsum;
  m["Trilu"] = trilu;
  m["Tile"] = tile;
  m["GatherElements"] = gather_elements;
  m["Range"] = range;
  m["DepthToSpace"] = depth_to_space;
  m["SpaceToDepth"] = space_to_depth;
  m["Size"] = size;
  m["NonZero"] = non_zero;
  m["GlobalMaxPool"] = global_max_pool;
  m["InstanceNormalization"] = instance_norm;
  m["GroupNormalization"] = group_norm;
  m["Resize"] = resize;
  m["Upsample"] = resize;
  m["GridSample"] = grid_sample;
  m["RoiAlign"] = roi_align;
  m["EyeLike"] = eye_like;
  m["OneHot"] = one_hot;
  m["MeanVarianceNormalization"] = mean_variance_norm;
}

}  // namespace kiln::frontend
