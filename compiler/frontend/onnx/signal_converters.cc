// Converters of ONNX's signal operators: DFT, STFT and MelWeightMatrix. Both become products with
// constant cosine and sine matrices (a length-n transform is an n x n' matrix product,
// which the matmul schedules run well at the lengths models use), the frames of STFT a
// take of constant indices.
//
// Complex values are ONNX's: a last dimension of 2 (real, imaginary); a real signal has
// a last dimension of 1.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "compiler/frontend/onnx/importer.h"

namespace kiln::frontend {

namespace {

NodeId slice_last(Importer& c, NodeId x, int64_t k) {
  std::vector<int64_t> s = c.type(x).shape;  // a copy: adding nodes moves the types
  std::vector<int64_t> b(s.size(), 0), e = s, st(s.size(), 1);
  b.back() = k;
  e.back() = k + 1;
  NodeId part = c.op("strided_slice", {x}, {{"begin", b}, {"end", e}, {"steps", st}});
  std::vector<int64_t> shape(s.begin(), s.end() - 1);
  return c.reshape(part, shape);
}

// The DFT of `x` ([..., L, 1|2] float32) along `axis` (not the last), `length` points
// (the signal zero-padded or cut to it), onesided: the first length/2 + 1 bins.
NodeId dft(Importer& c, NodeId x, int axis, int64_t length, bool inverse, bool onesided) {
  TensorType t = c.type(x);
  int rank = t.ndim();
  if (t.dtype != DataType::Float(32)) fail(fmt::format("DFT of {} is not supported (float32)", t.to_string()));
  if (t.shape.back() != 1 && t.shape.back() != 2)
    fail(fmt::format("the last dimension is {}: 1 (real) or 2 (complex) expected", t.shape.back()));
  if (axis < 0 || axis >= rank - 1) fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  if (length < 1) fail(fmt::format("dft_length {} is not positive", length));
  if (inverse && onesided) fail("inverse with onesided is not supported");
  bool complex = t.shape.back() == 2;
  int64_t have = t.shape[axis];
  // Move the signal axis last: [..., n] per part.
  std::vector<int64_t> perm;
  for (int d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  std::vector<int64_t> back(rank - 1);
  for (int d = 0; d < rank - 1; ++d) back[perm[d]] = d;
  auto part = [&](int64_t k) {
    NodeId p = slice_last(c, x, k);
    p = c.op("transpose", {p}, {{"perm", perm}});
    if (have > length) {
      std::vector<int64_t> s = c.type(p).shape;
      std::vector<int64_t> b(s.size(), 0), e = s, st(s.size(), 1);
      e.back() = length;
      p = c.op("strided_slice", {p}, {{"begin", b}, {"end", e}, {"steps", st}});
    }
    return p;
  };
  // Zero padding is a shorter matrix: the missing rows multiply zeros.
  int64_t n = std::min(have, length), bins = onesided ? length / 2 + 1 : length;
  double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0, sign = inverse ? 1.0 : -1.0;
  auto matrix = [&](double (*f)(double), double s, const char* name) {
    // Rows: the first n of the length x bins matrix.
    auto b = std::make_shared<interp::HostBuffer>(DataType::Float(32), std::vector<int64_t>{n, bins});
    for (int64_t r = 0; r < n; ++r)
      for (int64_t k = 0; k < bins; ++k)
        b->set(r * bins + k, s * f(2 * std::numbers::pi * static_cast<double>((r * k) % length) / static_cast<double>(length)));
    return c.constant(b, name);
  };
  NodeId cosm = matrix([](double v) { return std::cos(v); }, scale, "dft_cos");
  NodeId sinm = matrix([](double v) { return std::sin(v); }, scale * sign, "dft_sin");
  // (xr + i xi)(cos + i sign sin) = (xr cos - xi sign sin) + i (xr sign sin + xi cos)
  NodeId xr = part(0);
  NodeId re = c.op("matmul", {xr, cosm}), im = c.op("matmul", {xr, sinm});
  if (complex) {
    NodeId xi = part(1);
    re = c.op("subtract", {re, c.op("matmul", {xi, sinm})});
    im = c.op("add", {im, c.op("matmul", {xi, cosm})});
  }
  auto finish = [&](NodeId v) {
    v = c.op("transpose", {v}, {{"perm", back}});
    std::vector<int64_t> s = c.type(v).shape;
    s.push_back(1);
    return c.reshape(v, s);
  };
  return c.op("concatenate", {finish(re), finish(im)}, {{"axis", static_cast<int64_t>(rank - 1)}});
}

std::vector<NodeId> dft_op(Importer& c) {
  TensorType t = c.in_type(0);
  int rank = t.ndim();
  // Opset 20 takes the axis as input 2 (default -2, the last signal axis), 17 as an
  // attribute (default 1).
  int64_t axis = c.opset() >= 20 ? (c.has_input(2) ? static_cast<int64_t>(c.const_value(2, "axis")) : -2)
                                 : c.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  int64_t length = t.shape.at(static_cast<size_t>(std::clamp<int64_t>(axis, 0, rank - 1)));
  if (c.has_input(1)) {
    std::vector<int64_t> v = c.const_ints(1);
    if (v.size() != 1) fail("dft_length must hold one value");
    length = v[0];
  }
  return {dft(c, c.in(0), static_cast<int>(axis), length, c.attr_int("inverse", 0) != 0, c.attr_int("onesided", 0) != 0)};
}

// STFT(signal [B, L, 1|2], frame_step, window [W]?, frame_length?): the DFT of each
// windowed frame, [B, frames, bins, 2].
std::vector<NodeId> stft_op(Importer& c) {
  TensorType t = c.in_type(0);
  if (t.ndim() != 3) fail(fmt::format("the signal is {}: [batch, length, 1|2] expected", t.to_string()));
  std::vector<int64_t> step_v = c.const_ints(1);
  if (step_v.size() != 1 || step_v[0] < 1) fail("frame_step must be one positive value");
  int64_t step = step_v[0], frame = -1;
  if (c.has_input(3)) {
    std::vector<int64_t> v = c.const_ints(3);
    if (v.size() != 1 || v[0] < 1) fail("frame_length must be one positive value");
    frame = v[0];
  }
  if (c.has_input(2)) {
    const TensorType& w = c.in_type(2);
    if (w.ndim() != 1) fail(fmt::format("the window is {}: 1-d expected", w.to_string()));
    if (frame >= 0 && frame != w.shape[0]) fail(fmt::format("frame_length {} differs from the window's {}", frame, w.shape[0]));
    frame = w.shape[0];
  }
  if (frame < 0) fail("give a window or a frame_length");
  int64_t length = t.shape[1];
  if (frame > length) fail(fmt::format("frame_length {} exceeds the signal's length {}", frame, length));
  int64_t frames = (length - frame) / step + 1;
  auto idx = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::vector<int64_t>{frames, frame});
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t k = 0; k < frame; ++k) idx->set_int(f * frame + k, f * step + k);
  NodeId framed = c.op("take", {c.in(0), c.constant(idx, "frames")}, {{"axis", int64_t{1}}});  // [B, frames, frame, 1|2]
  if (c.has_input(2)) {
    NodeId w = c.reshape(c.in(2), {1, 1, frame, 1});
    if (c.type(w).dtype != t.dtype) w = c.op("cast", {w}, {{"dtype", dtype_name(t.dtype)}});
    framed = c.op("multiply", {framed, w});
  }
  bool onesided = c.attr_int("onesided", 1) != 0;
  return {dft(c, framed, 2, frame, false, onesided)};
}

// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
// upper_edge_hertz): [dft_length / 2 + 1, num_mel_bins] triangular filters on the mel
// scale, as ONNX defines them. Its inputs decide its shape, so they are known when
// compiling and the matrix is a constant.
std::vector<NodeId> mel_weight_matrix(Importer& c) {
  auto scalar = [&](int k) {
    std::vector<double> v = graph::constant_values(c.const_input(k));
    if (v.size() != 1) fail(fmt::format("input {} must hold one value, it holds {}", k, v.size()));
    return v[0];
  };
  auto bins = static_cast<int64_t>(scalar(0)), length = static_cast<int64_t>(scalar(1));
  double rate = scalar(2), lo_hz = scalar(3), hi_hz = scalar(4);
  if (bins < 1 || length < 1 || rate <= 0) fail("num_mel_bins, dft_length and sample_rate must be positive");
  if (lo_hz < 0 || hi_hz <= lo_hz) fail("the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz");
  int64_t spectrum = length / 2 + 1;
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double lo = mel(lo_hz), step = (mel(hi_hz) - lo) / static_cast<double>(bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(bins + 2));
  for (int64_t k = 0; k < bins + 2; ++k) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(k) * step + lo) / 2595) - 1);
    edge[static_cast<size_t>(k)] = static_cast<int64_t>(std::floor(static_cast<double>(length + 1) * hz / rate));
  }
  DataType t = onnx_dtype(static_cast<int>(c.attr_int("output_datatype", 1)));
  auto out = std::make_shared<interp::HostBuffer>(t, std::vector<int64_t>{spectrum, bins});
  out->fill(0);
  auto put = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= spectrum) fail(fmt::format("the upper edge reaches bin {}, past the spectrum's {}", j, spectrum));
    out->set(j * bins + i, v);
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = edge[static_cast<size_t>(i)], centre = edge[static_cast<size_t>(i + 1)], right = edge[static_cast<size_t>(i + 2)];
    if (centre == left) put(centre, i, 1);
    else
      for (int64_t j = left; j <= centre; ++j) put(j, i, static_cast<double>(j - left) / static_cast<double>(centre - left));
    for (int64_t j = centre; j < right; ++j) put(j, i, static_cast<double>(right - j) / static_cast<double>(right - centre));
  }
  return {c.constant(out)};
}

}  // namespace

void add_signal_converters(std::map<std::string, Converter>& m) {
  m["DFT"] = dft_op;
  m["STFT"] = stft_op;
  m["MelWeightMatrix"] = mel_weight_matrix;
}

}  // namespace kiln::frontend
