#include "compiler/graph/quant_pattern.h"

#include <string>

namespace kiln::graph {

using ir::DataType;

std::optional<double> number(const Attrs& a, const std::string& key) {
  if (!a.has(key)) return std::nullopt;
  const auto& v = a.map().at(key);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

bool is_int8(const TensorType& t) { return t.dtype == DataType::Int(8); }

namespace {

// The value of a one-element integer constant.
std::optional<int64_t> scalar(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (!n.is_constant() || n.type.size() != 1 || !n.type.dtype.is_int()) return std::nullopt;
  return n.value->get_int(0);
}

bool is_int32(const TensorType& t) { return t.dtype == DataType::Int(32); }

// The tail every accelerator chain ends with: cast<int8>(clip(x)) with clip's bounds
// those of int8 or of a ReLU. Sets `relu` and returns clip's input.
std::optional<NodeId> match_requant_tail(const Graph& g, const std::vector<int>& uses, NodeId cast, bool* relu,
                                         std::vector<NodeId>* chain) {
  const Node& c = g.node(cast);
  if (c.op != "cast" || !is_int8(c.type)) return std::nullopt;
  NodeId clip = c.inputs[0];
  const Node& cl = g.node(clip);
  if (cl.op != "clip" || uses[clip] != 1 || !is_int32(cl.type)) return std::nullopt;
  auto lo = number(cl.attrs, "min"), hi = number(cl.attrs, "max");
  if (!lo || !hi || *hi != 127 || (*lo != -128 && *lo != 0)) return std::nullopt;
  *relu = *lo == 0;
  chain->push_back(clip);
  return cl.inputs[0];
}

// An optional right_shift by a scalar constant; returns the shifted node.
NodeId match_shift(const Graph& g, const std::vector<int>& uses, NodeId id, int64_t* shift, std::vector<NodeId>* chain) {
  const Node& n = g.node(id);
  *shift = 0;
  if (n.op != "right_shift" || uses[id] != 1) return id;
  auto k = scalar(g, n.inputs[1]);
  if (!k) return id;
  *shift = *k;
  chain->push_back(id);
  return n.inputs[0];
}

// One int8 operand widened to int32 and shifted: [shift(] cast<int32>(x) [, k)].
std::optional<NodeId> match_operand(const Graph& g, const std::vector<int>& uses, NodeId id, int64_t* shift,
                                    std::vector<NodeId>* chain) {
  const Node& n = g.node(id);
  *shift = 0;
  NodeId cast = id;
  if ((n.op == "right_shift" || n.op == "left_shift") && uses[id] == 1) {
    auto k = scalar(g, n.inputs[1]);
    if (!k) return std::nullopt;
    *shift = n.op == "right_shift" ? *k : -*k;
    chain->push_back(id);
    cast = n.inputs[0];
  }
  const Node& c = g.node(cast);
  if (c.op != "cast" || uses[cast] != 1 || !is_int32(c.type) || !is_int8(g.type(c.inputs[0]))) return std::nullopt;
  chain->push_back(cast);
  return c.inputs[0];
}

}  // namespace

std::optional<ConvChain> match_conv_chain(const Graph& g, const std::vector<int>& uses, NodeId cast) {
  ConvChain m;
  auto in = match_requant_tail(g, uses, cast, &m.relu, &m.interior);
  if (!in) return std::nullopt;
  NodeId add = match_shift(g, uses, *in, &m.shift, &m.interior);
  const Node& a = g.node(add);
  if (a.op != "add" || uses[add] != 1 || !is_int32(a.type)) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const Node& conv = g.node(a.inputs[k]);
    const Node& bias = g.node(a.inputs[1 - k]);
    bool dense = conv.op == "dense";
    if ((conv.op != "conv2d" && !dense) || uses[a.inputs[k]] != 1 || !is_int32(conv.type)) continue;
    std::vector<int64_t> bias_shape{1, conv.type.shape[1]};
    if (!dense) bias_shape.insert(bias_shape.end(), {1, 1});
    if (!bias.is_constant() || !is_int32(bias.type) || bias.type.shape != bias_shape) continue;
    if (!is_int8(g.type(conv.inputs[0])) || !is_int8(g.type(conv.inputs[1])) || !g.node(conv.inputs[1]).is_constant())
      continue;
    m.conv = a.inputs[k];
    m.dense = dense;
    m.x = conv.inputs[0];
    m.weight = conv.inputs[1];
    m.bias = a.inputs[1 - k];
    m.interior.push_back(add);
    m.interior.push_back(m.conv);
    return m;
  }
  return std::nullopt;
}

std::optional<AddChain> match_add_chain(const Graph& g, const std::vector<int>& uses, NodeId cast) {
  AddChain m;
  auto in = match_requant_tail(g, uses, cast, &m.relu, &m.interior);
  if (!in) return std::nullopt;
  NodeId id = match_shift(g, uses, *in, &m.shift, &m.interior);
  const Node* n = &g.node(id);
  if (n->op != "add" || uses[id] != 1 || !is_int32(n->type)) return std::nullopt;
  // The rounding term: add(sum, scalar).
  for (int k = 0; k < 2; ++k) {
    auto r = scalar(g, n->inputs[1 - k]);
    const Node& sum = g.node(n->inputs[k]);
    if (r && sum.op == "add" && uses[n->inputs[k]] == 1) {
      m.round = *r;
      m.interior.push_back(id);
      id = n->inputs[k];
      n = &sum;
      break;
    }
  }
  if (n->op != "add" || scalar(g, n->inputs[0]) || scalar(g, n->inputs[1])) return std::nullopt;
  m.interior.push_back(id);
  auto a = match_operand(g, uses, n->inputs[0], &m.shift_a, &m.interior);
  auto b = match_operand(g, uses, n->inputs[1], &m.shift_b, &m.interior);
  if (!a || !b || g.type(*a) != g.type(*b) || g.type(*a).ndim() != 4) return std::nullopt;
  m.a = *a;
  m.b = *b;
  return m;
}

}  // namespace kiln::graph
