// Converters of ONNX's selection, scatter and index operators (TopK, GatherND,
// ScatterElements, Scatter, ScatterND, ReverseSequence, Einsum, Det) and of the window
// generators (HannWindow, HammingWindow, BlackmanWindow).
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <numbers>
#include <set>

#include "compiler/frontend/onnx/importer.h"

namespace kiln::frontend {

namespace {

// The axis attribute normalized against `rank`, or an error naming it.
int64_t axis_attr(Importer& c, const std::string& name, int64_t def, int64_t rank) {
  int64_t axis = c.attr_int(name, def);
  if (axis < -rank || axis >= rank) fail(fmt::format("{} {} is out of range for rank {}", name, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

NodeId as_int64(Importer& c, NodeId x) {
  return c.type(x).dtype == DataType::Int(64) ? x : c.op("cast", {x}, {{"dtype", std::string("int64")}});
}

// 0, 1, ..., n-1 as int64 of `shape` (n elements).
NodeId iota(Importer& c, int64_t n, std::vector<int64_t> shape, const std::string& suffix) {
  auto b = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::move(shape));
  for (int64_t i = 0; i < n; ++i) b->set_int(i, i);
  return c.constant(b, suffix);
}

// A generalized cosine window sum_k (-1)^k a_k cos(2 pi k n / N), N the size (periodic)
// or the size - 1 (symmetric).
Converter window(std::vector<double> coeffs) {
  return [coeffs](Importer& c) {
    std::vector<int64_t> size = c.const_ints(0);
    if (size.size() != 1 || size[0] < 1) fail("size must be one positive integer");
    int64_t n = size[0];
    DataType t = onnx_dtype(static_cast<int>(c.attr_int("output_datatype", onnx::TensorProto::FLOAT)));
    double den = static_cast<double>(c.attr_int("periodic", 1) ? n : n - 1);
    auto b = std::make_shared<interp::HostBuffer>(t, std::vector<int64_t>{n});
    for (int64_t i = 0; i < n; ++i) {
      double w = 0, sign = 1;
      for (size_t k = 0; k < coeffs.size(); ++k, sign = -sign)
        w += sign * coeffs[k] * (k == 0 ? 1.0 : std::cos(2 * std::numbers::pi * static_cast<double>(k) * static_cast<double>(i) / den));
      b->set(i, w);
    }
    return std::vector<NodeId>{c.constant(b)};
  };
}

// TopK: the k largest (or smallest) along the axis, best first, and their positions.
std::vector<NodeId> top_k(Importer& c) {
  TensorType t = c.in_type(0);
  int64_t axis = axis_attr(c, "axis", -1, t.ndim());
  int64_t k = 0;
  if (c.opset() >= 10) {
    std::vector<int64_t> kv = c.const_ints(1);
    if (kv.size() != 1) fail(fmt::format("K must hold one value, it holds {}", kv.size()));
    k = kv[0];
  } else {
    k = c.attr_int("k", 0);
  }
  if (k < 1 || k > t.shape[axis])
    fail(fmt::format("k = {} is out of range for axis {} of length {}", k, axis, t.shape[axis]));
  NodeId idx = c.op("topk_indices", {c.in(0)}, {{"axis", axis}, {"k", k}, {"largest", c.attr_int("largest", 1)}});
  return {c.op("gather_elements", {c.in(0), idx}, {{"axis", axis}}), idx};
}

// GatherND: data[b..., idx[b..., j..., :], tail...] as one take from the data with its
// batch and indexed dimensions flattened.
std::vector<NodeId> gather_nd(Importer& c) {
  TensorType d = c.in_type(0), it = c.in_type(1);
  int64_t r = d.ndim(), q = it.ndim(), b = c.attr_int("batch_dims", 0);
  if (q < 1) fail("indices need a rank of at least 1");
  if (b < 0 || b >= std::min(q, r)) fail(fmt::format("batch_dims {} is out of range for ranks {} and {}", b, r, q));
  int64_t m = it.shape[q - 1];
  if (m < 1 || m > r - b) fail(fmt::format("an index of length {} does not address data of rank {} after {} batch dimensions", m, r, b));
  for (int64_t k = 0; k < b; ++k)
    if (it.shape[k] != d.shape[k]) fail(fmt::format("batch dimension {} differs: {} in data, {} in indices", k, d.shape[k], it.shape[k]));
  int64_t batch = product(d.shape, 0, b), inner = product(d.shape, b, b + m);
  std::vector<int64_t> flat{batch * inner};
  flat.insert(flat.end(), d.shape.begin() + b + m, d.shape.end());
  NodeId data = c.reshape(c.in(0), flat);
  // Each index component normalized (negative from the end) and weighted by its stride.
  auto dims = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::vector<int64_t>{m});
  auto strides = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::vector<int64_t>{m});
  for (int64_t k = 0; k < m; ++k) {
    dims->set_int(k, d.shape[b + k]);
    strides->set_int(k, product(d.shape, b + k + 1, b + m));
  }
  NodeId idx = as_int64(c, c.in(1));
  NodeId zero = c.scalar(DataType::Int(64), 0);
  idx = c.op("where", {c.op("less", {idx, zero}), c.op("add", {idx, c.constant(dims, "_dims")}), idx});
  NodeId lin = c.op("sum", {c.op("multiply", {idx, c.constant(strides, "_strides")})}, {{"axes", std::vector<int64_t>{q - 1}}, {"keepdims", int64_t{0}}});
  if (b > 0) {
    std::vector<int64_t> oshape(it.shape.begin(), it.shape.begin() + b);
    oshape.resize(static_cast<size_t>(q - 1), 1);
    auto offset = std::make_shared<interp::HostBuffer>(DataType::Int(64), oshape);
    for (int64_t i = 0; i < batch; ++i) offset->set_int(i, i * inner);
    lin = c.op("add", {lin, c.constant(offset, "_batch_offset")});
  }
  return {c.op("take", {data, lin}, {{"axis", int64_t{0}}})};
}

std::vector<NodeId> scatter_elements(Importer& c) {
  int64_t axis = axis_attr(c, "axis", 0, c.in_type(0).ndim());
  Attrs a{{"axis", axis}, {"reduction", c.attr_string("reduction", "none")}};
  return {c.op("scatter_elements", {c.in(0), c.in(1), c.in(2)}, a)};
}

// ScatterND: indices [..., q] and updates [..., data.shape[q:]] flattened to one list.
std::vector<NodeId> scatter_nd(Importer& c) {
  TensorType d = c.in_type(0), it = c.in_type(1), ut = c.in_type(2);
  if (it.ndim() < 1) fail("indices need a rank of at least 1");
  int64_t q = it.shape.back();
  if (q < 1 || q > d.ndim()) fail(fmt::format("an index of length {} does not address data of rank {}", q, d.ndim()));
  std::vector<int64_t> want(it.shape.begin(), it.shape.end() - 1);
  want.insert(want.end(), d.shape.begin() + q, d.shape.end());
  if (ut.shape != want) fail(fmt::format("updates must be [{}], not {}", fmt::join(want, ", "), ut.to_string()));
  int64_t n = product(it.shape, 0, it.shape.size() - 1);
  std::vector<int64_t> ushape{n};
  ushape.insert(ushape.end(), d.shape.begin() + q, d.shape.end());
  Attrs a{{"reduction", c.attr_string("reduction", "none")}};
  return {c.op("scatter_nd", {c.in(0), c.reshape(c.in(1), {n, q}), c.reshape(c.in(2), ushape)}, a)};
}

// ReverseSequence: along the time axis the first seq_len[b] elements of batch b reversed,
// as one gather_elements whose indices are computed from the lengths.
std::vector<NodeId> reverse_sequence(Importer& c) {
  TensorType t = c.in_type(0);
  int64_t n = t.ndim();
  if (n < 2) fail("the input needs a rank of at least 2");
  int64_t ba = axis_attr(c, "batch_axis", 1, n), ta = axis_attr(c, "time_axis", 0, n);
  if (ba == ta) fail("batch_axis and time_axis are the same");
  if (c.in_type(1).shape != std::vector<int64_t>{t.shape[ba]})
    fail(fmt::format("sequence_lens must be [{}], not {}", t.shape[ba], c.in_type(1).to_string()));
  std::vector<int64_t> tshape(static_cast<size_t>(n), 1), bshape(static_cast<size_t>(n), 1);
  tshape[ta] = t.shape[ta];
  bshape[ba] = t.shape[ba];
  NodeId time = iota(c, t.shape[ta], tshape, "_time");
  NodeId len = c.reshape(as_int64(c, c.in(1)), bshape);
  NodeId rev = c.op("subtract", {c.op("subtract", {len, c.scalar(DataType::Int(64), 1)}), time});
  NodeId idx = c.op("where", {c.op("less", {time, len}), rev, time});
  idx = c.op("broadcast_to", {idx}, {{"shape", t.shape}});
  return {c.op("gather_elements", {c.in(0), idx}, {{"axis", ta}})};
}

// Einsum: the equation with "..." spelled as letters the equation does not use (right
// aligned, as broadcasting is) and the implicit output made explicit.
std::string einsum_equation(const std::string& raw, const std::vector<int>& ranks) {
  std::string eq;
  for (char ch : raw)
    if (!std::isspace(static_cast<unsigned char>(ch))) eq += ch;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size()) fail(fmt::format("the equation has {} operands, the node {}", terms.size(), ranks.size()));
  std::set<char> used(eq.begin(), eq.end());
  std::string spare;
  for (char ch = 'A'; ch <= 'z'; ++ch)
    if (std::isalpha(static_cast<unsigned char>(ch)) && !used.count(ch)) spare += ch;
  size_t ell = 0;  // the most dimensions an ellipsis stands for
  for (size_t k = 0; k < terms.size(); ++k) {
    size_t dots = terms[k].find("...");
    if (dots == std::string::npos) continue;
    int letters = static_cast<int>(terms[k].size()) - 3;
    if (ranks[k] < letters) fail(fmt::format("operand {} has rank {}, fewer than its subscripts '{}'", k, ranks[k], terms[k]));
    ell = std::max(ell, static_cast<size_t>(ranks[k] - letters));
  }
  if (ell > spare.size()) fail("the ellipsis stands for more dimensions than there are letters");
  std::string ell_letters = spare.substr(0, ell);
  auto expand = [&](const std::string& term, size_t rank_of_dots) {
    size_t dots = term.find("...");
    if (dots == std::string::npos) return term;
    return term.substr(0, dots) + ell_letters.substr(ell - rank_of_dots) + term.substr(dots + 3);
  };
  std::string out;
  std::map<char, int> count;
  for (size_t k = 0; k < terms.size(); ++k) {
    for (char ch : terms[k])
      if (ch != '.') count[ch]++;
    terms[k] = expand(terms[k], terms[k].find("...") == std::string::npos ? 0 : ranks[k] - (terms[k].size() - 3));
  }
  if (arrow != std::string::npos) {
    out = expand(eq.substr(arrow + 2), ell);
  } else {
    out = ell_letters;
    for (const auto& [ch, n] : count)
      if (n == 1) out += ch;
  }
  std::string norm;
  for (size_t k = 0; k < terms.size(); ++k) norm += (k ? "," : "") + terms[k];
  return norm + "->" + out;
}

std::vector<NodeId> einsum(Importer& c) {
  std::vector<NodeId> in;
  std::vector<int> ranks;
  for (int k = 0; k < c.num_inputs(); ++k) {
    in.push_back(c.in(k));
    ranks.push_back(c.in_type(k).ndim());
  }
  std::string eq = einsum_equation(c.attr_string("equation", ""), ranks);
  return {c.op("einsum", in, {{"equation", eq}})};
}

}  // namespace

void add_index_converters(std::map<std::string, Converter>& m) {
  m["HannWindow"] = window({0.5, 0.5});
  m["HammingWindow"] = window({25.0 / 46.0, 21.0 / 46.0});
  m["BlackmanWindow"] = window({0.42, 0.5, 0.08});
  m["TopK"] = top_k;
  m["GatherND"] = gather_nd;
  m["ScatterElements"] = scatter_elements;
  m["Scatter"] = scatter_elements;
  m["ScatterND"] = scatter_nd;
  m["ReverseSequence"] = reverse_sequence;
  m["Einsum"] = einsum;
  m["Det"] = [](Importer& c) { return std::vector<NodeId>{c.op("det", {c.in(0)})}; };
}

}  // namespace kiln::frontend
