// The windowed ONNX operators: Conv, ConvTranspose, MaxPool (and its Indices output),
// AveragePool, GlobalAveragePool, LpPool, GlobalLpPool, LpNormalization, LRN, MaxUnpool. 2-d data maps onto the 2-d graph ops
// (conv2d, ...), 3-d data onto the 3-d ones (conv3d, ... in compiler/graph/ops_window.cc),
// and 1-d data [N, C, W] onto the 2-d ops as [N, C, 1, W], so it keeps their schedules.
#include "compiler/frontend/onnx/importer.h"

namespace kiln::frontend {

namespace {

// The spatial rank of [N, C, D1, ...] data; an error beyond the ranks Kiln has ops for.
size_t spatial_rank(Importer& c, const TensorType& x) {
  if (x.ndim() < 3 || x.ndim() > 5)
    fail(fmt::format("{} takes [N, C, D1, ...] data with 1 to 3 spatial dimensions, got {}", c.node().op_type(), x.to_string()));
  return static_cast<size_t>(x.ndim() - 2);
}

std::vector<int64_t> spatial(const TensorType& t) { return std::vector<int64_t>(t.shape.begin() + 2, t.shape.end()); }

// Attribute `name` with one entry per spatial dimension (`def` each when absent).
std::vector<int64_t> per_dim(Importer& c, const std::string& name, size_t r, int64_t def) {
  auto v = c.attr_ints(name, std::vector<int64_t>(r, def));
  if (v.size() != r) fail(fmt::format("{} has {} entries, a {}-d window needs {}", name, v.size(), r, r));
  return v;
}

// Explicit pads (every begin, then every end) of a window over `in`, from `pads` or
// `auto_pad`.
std::vector<int64_t> window_pads(Importer& c, const std::vector<int64_t>& in, const std::vector<int64_t>& k,
                                 const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  size_t r = k.size();
  std::string mode = c.attr_string("auto_pad", "NOTSET");
  if (mode == "NOTSET") return per_dim(c, "pads", 2 * r, 0);
  if (mode == "VALID") return std::vector<int64_t>(2 * r, 0);
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER") fail("unknown auto_pad '" + mode + "'");
  std::vector<int64_t> p(2 * r);
  for (size_t j = 0; j < r; ++j) {
    if (s[j] <= 0) fail("strides must be positive");
    int64_t out = (in[j] + s[j] - 1) / s[j];
    int64_t total = std::max<int64_t>((out - 1) * s[j] + (k[j] - 1) * d[j] + 1 - in[j], 0);
    p[j] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
    p[j + r] = total - p[j];
  }
  return p;
}

// 1-d data and windows as 2-d ones with a unit first spatial dimension (H = 1).
NodeId with_unit_h(Importer& c, NodeId x) {
  auto s = c.type(x).shape;
  s.insert(s.begin() + 2, 1);
  return c.reshape(x, s);
}

NodeId without_unit_h(Importer& c, NodeId y) {
  auto s = c.type(y).shape;
  s.erase(s.begin() + 2);
  return c.reshape(y, s);
}

Attrs with_unit_h(const Attrs& a) {
  Attrs r = a;
  for (const char* key : {"kernel", "strides", "dilations", "output_padding"}) {
    if (!a.has(key)) continue;
    auto v = a.get_ints(key);
    v.insert(v.begin(), std::string(key) == "output_padding" ? 0 : 1);
    r.set(key, v);
  }
  if (a.has("pads")) {
    auto p = a.get_ints("pads");
    r.set("pads", std::vector<int64_t>{0, p.at(0), 0, p.at(1)});
  }
  return r;
}

// Graph op op2d (2-d data) or op3d (3-d data) on `inputs`; 1-d data runs op2d on a unit H.
NodeId window_op(Importer& c, size_t r, const std::string& op2d, const std::string& op3d, std::vector<NodeId> inputs,
                 const Attrs& a) {
  if (r == 2) return c.op(op2d, std::move(inputs), a);
  if (r == 3) return c.op(op3d, std::move(inputs), a);
  for (NodeId& x : inputs) x = with_unit_h(c, x);
  return without_unit_h(c, c.op(op2d, std::move(inputs), with_unit_h(a)));
}

// The bias [O] of a convolution, broadcast over the spatial dimensions.
NodeId add_bias(Importer& c, NodeId y, size_t r) {
  std::vector<int64_t> shape(r + 1, 1);
  shape[0] = c.in_type(2).size();
  return c.op("add", {y, c.reshape(c.in(2), shape)});
}

// kernel_shape, when given, must be the weight's.
std::vector<int64_t> conv_kernel(Importer& c, const TensorType& w) {
  auto kw = spatial(w);
  auto k = per_dim(c, "kernel_shape", kw.size(), 0);
  if (c.has_attr("kernel_shape") && k != kw)
    fail(fmt::format("kernel_shape [{}] differs from the weight's [{}]", fmt::join(k, ", "), fmt::join(kw, ", ")));
  return kw;
}

std::vector<NodeId> conv(Importer& c) {
  TensorType x = c.in_type(0);
  size_t r = spatial_rank(c, x);
  if (c.in_type(1).ndim() != x.ndim()) fail(fmt::format("the weight {} does not match the data {}", c.in_type(1).to_string(), x.to_string()));
  NodeId y = window_op(c, r, "conv2d", "conv3d", {c.in(0), c.in(1)}, conv_window_attrs(c, x, c.in_type(1)));
  return {c.has_input(2) ? add_bias(c, y, r) : y};
}

// ConvTranspose's pads, from `pads`, or from output_shape / auto_pad as ONNX's
// equations give them: total = s*(in-1) + output_padding + (k-1)*d + 1 - out, split
// with the odd element at the end for SAME_UPPER and at the beginning otherwise. An
// output_shape larger than the unpadded output (a negative total) extends it at the
// end, as output_padding does (as ONNX Runtime and ONNX's reference data).
void transpose_pads(Importer& c, const TensorType& x, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                    const std::vector<int64_t>& d, std::vector<int64_t>& pads, std::vector<int64_t>& out_pad) {
  size_t r = k.size();
  std::string mode = c.attr_string("auto_pad", "NOTSET");
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER") fail("unknown auto_pad '" + mode + "'");
  auto in = spatial(x);
  std::vector<int64_t> out;
  if (c.has_attr("output_shape")) {
    out = c.attr_ints("output_shape", {});
    if (out.size() == r + 2) out.erase(out.begin(), out.begin() + 2);
    if (out.size() != r) fail(fmt::format("output_shape has {} entries, the data has {} spatial dimensions", out.size(), r));
  } else if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (size_t j = 0; j < r; ++j) out.push_back(in[j] * s[j]);
  }
  if (out.empty()) {
    pads = mode == "VALID" ? std::vector<int64_t>(2 * r, 0) : per_dim(c, "pads", 2 * r, 0);
    return;
  }
  pads.assign(2 * r, 0);
  for (size_t j = 0; j < r; ++j) {
    if (out[j] <= 0) fail(fmt::format("output_shape [{}] has a size that is not positive", fmt::join(out, ", ")));
    int64_t full = s[j] * (in[j] - 1) + (k[j] - 1) * d[j] + 1;
    int64_t total = full + out_pad[j] - out[j];
    if (total < 0) {
      out_pad[j] = out[j] - full;
      continue;
    }
    pads[j] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
    pads[j + r] = total - pads[j];
  }
}

std::vector<NodeId> conv_transpose(Importer& c) {
  TensorType x = c.in_type(0), w = c.in_type(1);
  size_t r = spatial_rank(c, x);
  if (w.ndim() != x.ndim()) fail(fmt::format("the weight {} does not match the data {}", w.to_string(), x.to_string()));
  auto k = conv_kernel(c, w);
  auto s = per_dim(c, "strides", r, 1);
  auto d = per_dim(c, "dilations", r, 1);
  auto out_pad = per_dim(c, "output_padding", r, 0);
  std::vector<int64_t> pads;
  transpose_pads(c, x, k, s, d, pads, out_pad);
  Attrs a{{"strides", s}, {"dilations", d}, {"pads", pads}, {"output_padding", out_pad}, {"groups", c.attr_int("group", 1)}};
  NodeId y = window_op(c, r, "conv2d_transpose", "conv3d_transpose", {c.in(0), c.in(1)}, a);
  return {c.has_input(2) ? add_bias(c, y, r) : y};
}

std::vector<NodeId> pool(Importer& c, bool is_max) {
  TensorType x = c.in_type(0);
  size_t r = spatial_rank(c, x);
  auto k = c.attr_ints("kernel_shape", {});
  if (k.size() != r) fail(fmt::format("kernel_shape has {} entries, the data has {} spatial dimensions", k.size(), r));
  auto s = per_dim(c, "strides", r, 1);
  auto d = per_dim(c, "dilations", r, 1);
  Attrs a{{"kernel", k}, {"strides", s}, {"dilations", d}, {"pads", window_pads(c, spatial(x), k, s, d)},
          {"ceil_mode", c.attr_int("ceil_mode", 0)}};
  if (!is_max) {
    if (d != std::vector<int64_t>(r, 1)) fail("dilations: dilated average pooling is not supported");
    a.set("count_include_pad", c.attr_int("count_include_pad", 0));
    return {window_op(c, r, "avg_pool2d", "avg_pool3d", {c.in(0)}, a)};
  }
  NodeId y = window_op(c, r, "max_pool2d", "max_pool3d", {c.in(0)}, a);
  if (c.node().output_size() < 2 || c.node().output(1).empty()) return {y};
  a.set("storage_order", c.attr_int("storage_order", 0));
  return {y, window_op(c, r, "max_pool_indices", "max_pool_indices", {c.in(0)}, a)};
}

std::vector<NodeId> global_average_pool(Importer& c) {
  TensorType x = c.in_type(0);
  size_t r = spatial_rank(c, x);
  if (r == 2) return {c.op("global_avg_pool2d", {c.in(0)})};
  std::vector<int64_t> axes;
  for (size_t j = 0; j < r; ++j) axes.push_back(static_cast<int64_t>(j + 2));
  return {c.op("mean", {c.in(0)}, {{"axes", axes}, {"keepdims", int64_t{1}}})};
}

// |x|^p elementwise, for the p-norms: x*x for p = 2, |x| for p = 1.
NodeId abs_power(Importer& c, NodeId x, int64_t p) {
  if (p == 2) return c.op("multiply", {x, x});
  NodeId a = c.op("abs", {x});
  return p == 1 ? a : c.op("power", {a, c.scalar(c.type(x).dtype, static_cast<double>(p))});
}

// s^(1/p): the inverse of abs_power on a sum.
NodeId root(Importer& c, NodeId s, int64_t p) {
  if (p == 1) return s;
  if (p == 2) return c.op("sqrt", {s});
  return c.op("power", {s, c.scalar(c.type(s).dtype, 1.0 / static_cast<double>(p))});
}

int64_t norm_order(Importer& c, int64_t def) {
  if (!c.in_type(0).dtype.is_float()) fail(fmt::format("{} takes floating-point data", c.node().op_type()));
  int64_t p = c.attr_int("p", def);
  if (p <= 0) fail(fmt::format("p must be positive, got {}", p));
  return p;
}

// LpPool: (sum of |x|^p over each window)^(1/p), the sum being an average pooling that
// counts the zero padding, times the window's size.
std::vector<NodeId> lp_pool(Importer& c) {
  int64_t p = norm_order(c, 2);
  TensorType x = c.in_type(0);
  size_t r = spatial_rank(c, x);
  auto k = c.attr_ints("kernel_shape", {});
  if (k.size() != r) fail(fmt::format("kernel_shape has {} entries, the data has {} spatial dimensions", k.size(), r));
  auto s = per_dim(c, "strides", r, 1);
  std::vector<int64_t> d(r, 1);
  // Opset 18's dilations and ceil_mode.
  if (per_dim(c, "dilations", r, 1) != d) fail("dilations: dilated LpPool is not supported");
  if (c.attr_int("ceil_mode", 0) != 0) fail("ceil_mode=1 is not supported for LpPool");
  Attrs a{{"kernel", k}, {"strides", s}, {"dilations", d}, {"pads", window_pads(c, spatial(x), k, s, d)},
          {"ceil_mode", int64_t{0}}, {"count_include_pad", int64_t{1}}};
  NodeId mean = window_op(c, r, "avg_pool2d", "avg_pool3d", {abs_power(c, c.in(0), p)}, a);
  NodeId sum = c.op("multiply", {mean, c.scalar(x.dtype, static_cast<double>(product(k, 0, k.size())))});
  return {root(c, sum, p)};
}

// GlobalLpPool: the p-norm of each channel over all spatial positions.
std::vector<NodeId> global_lp_pool(Importer& c) {
  int64_t p = norm_order(c, 2);
  size_t r = spatial_rank(c, c.in_type(0));
  std::vector<int64_t> axes;
  for (size_t j = 0; j < r; ++j) axes.push_back(static_cast<int64_t>(j + 2));
  return {root(c, c.op("sum", {abs_power(c, c.in(0), p)}, {{"axes", axes}, {"keepdims", int64_t{1}}}), p)};
}

// LpNormalization: x divided by its p-norm (p = 1 or 2) along `axis`.
std::vector<NodeId> lp_normalization(Importer& c) {
  int64_t p = norm_order(c, 2);
  if (p != 1 && p != 2) fail(fmt::format("p must be 1 or 2, got {}", p));
  TensorType x = c.in_type(0);
  int64_t axis = c.attr_int("axis", -1);
  if (axis < -x.ndim() || axis >= x.ndim()) fail(fmt::format("axis {} is out of range for {}", axis, x.to_string()));
  NodeId norm = root(c, c.op("sum", {abs_power(c, c.in(0), p)}, {{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}}), p);
  return {c.op("divide", {c.in(0), norm})};
}

// y = x / (bias + alpha/size * sum of x^2 over `size` neighbouring channels)^beta; the
// sum is an average pooling over the channels of [N, 1, C, rest].
std::vector<NodeId> lrn(Importer& c) {
  TensorType x = c.in_type(0);
  if (x.ndim() < 3) fail(fmt::format("LRN takes [N, C, D1, ...] data, got {}", x.to_string()));
  if (!x.dtype.is_float()) fail("LRN takes floating-point data");
  int64_t size = c.attr_int("size", 0);
  if (size <= 0) fail(fmt::format("size must be positive, got {}", size));
  double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75), bias = c.attr_float("bias", 1.0);
  int64_t rest = product(x.shape, 2, x.shape.size());
  NodeId sq = c.reshape(c.op("multiply", {c.in(0), c.in(0)}), {x.shape[0], 1, x.shape[1], rest});
  Attrs a{{"kernel", std::vector<int64_t>{size, 1}},
          {"strides", std::vector<int64_t>{1, 1}},
          {"dilations", std::vector<int64_t>{1, 1}},
          {"pads", std::vector<int64_t>{(size - 1) / 2, 0, size / 2, 0}},
          {"count_include_pad", int64_t{1}}};
  NodeId mean = c.reshape(c.op("avg_pool2d", {sq}, a), x.shape);
  DataType t = x.dtype;
  NodeId base = c.op("add", {c.op("multiply", {mean, c.scalar(t, alpha)}), c.scalar(t, bias)});
  return {c.op("divide", {c.in(0), c.op("power", {base, c.scalar(t, beta)})})};
}

// The values of a MaxPool put back where its Indices say, zeros elsewhere; the output
// shape is the optional third input's (a constant) or the window's default.
std::vector<NodeId> max_unpool(Importer& c) {
  TensorType x = c.in_type(0);
  size_t r = spatial_rank(c, x);
  auto k = c.attr_ints("kernel_shape", {});
  if (k.size() != r) fail(fmt::format("kernel_shape has {} entries, the data has {} spatial dimensions", k.size(), r));
  Attrs a{{"kernel", k}, {"strides", per_dim(c, "strides", r, 1)}, {"pads", per_dim(c, "pads", 2 * r, 0)}};
  if (c.has_input(2)) a.set("output_shape", c.const_ints(2));
  return {c.op("max_unpool", {c.in(0), c.in(1)}, a)};
}

}  // namespace

Attrs conv_window_attrs(Importer& c, const TensorType& x, const TensorType& w) {
  auto k = conv_kernel(c, w);
  size_t r = k.size();
  auto s = per_dim(c, "strides", r, 1);
  auto d = per_dim(c, "dilations", r, 1);
  return Attrs{{"strides", s}, {"dilations", d}, {"pads", window_pads(c, spatial(x), k, s, d)}, {"groups", c.attr_int("group", 1)}};
}

void add_window_converters(std::map<std::string, Converter>& m) {
  m["Conv"] = conv;
  m["ConvTranspose"] = conv_transpose;
  m["MaxPool"] = [](Importer& c) { return pool(c, true); };
  m["AveragePool"] = [](Importer& c) { return pool(c, false); };
  m["GlobalAveragePool"] = global_average_pool;
  m["LpPool"] = lp_pool;
  m["GlobalLpPool"] = global_lp_pool;
  m["LpNormalization"] = lp_normalization;
  m["LRN"] = lrn;
  m["MaxUnpool"] = max_unpool;
}

}  // namespace kiln::frontend
