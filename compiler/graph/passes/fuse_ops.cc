// FuseOps, by TVM's rules on the op patterns (op.h):
//  - elemwise, broadcast and injective ops fuse into a consumer that is elemwise,
//    broadcast, injective or a reduction;
//  - an out_elemwise_fusable op (conv2d, dense, matmul, pooling) or a reduction takes
//    the elemwise and broadcast ops after it (conv2d + bias add + relu; a residual add);
//  - a group holds at most one such anchor; opaque ops (softmax) stay alone.
// A producer joins its consumer's group when the consumer is its one user, or when all
// its users are in that group by then (TVM fuses up to the post-dominator), and it is
// not a graph output: each group writes one tensor. A producer with several users in
// the group is computed where each reads it (inlined), the product of an anchor once.
#include <numeric>

#include "compiler/graph/op.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/graph/strategy.h"

namespace kiln::graph {

namespace {

bool is_light(OpPattern p) { return p <= OpPattern::Injective; }

struct Groups {
  std::vector<int> parent;
  std::vector<OpPattern> anchor;  // per root: the strongest pattern in the group
  std::vector<bool> has_anchor;
  explicit Groups(int n) : parent(n), anchor(n, OpPattern::ElemWise), has_anchor(n, false) {
    std::iota(parent.begin(), parent.end(), 0);
  }
  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
};

}  // namespace

std::vector<FusedGroup> fuse_ops(const Graph& g) {
  std::vector<int> uses = g.use_counts();
  std::vector<std::vector<NodeId>> users(g.size());
  for (NodeId id = 0; id < g.size(); ++id)
    for (NodeId i : g.node(id).inputs) users[i].push_back(id);
  std::vector<bool> is_output(g.size(), false);
  for (NodeId o : g.outputs()) is_output[o] = true;
  Groups gr(g.size());
  auto pattern = [&](NodeId id) { return op_def(g.node(id).op).pattern; };
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.is_input() || n.is_constant()) continue;
    OpPattern p = pattern(id);
    if (p == OpPattern::OutEWiseFusable || p == OpPattern::CommReduce) {
      gr.has_anchor[id] = true;
      gr.anchor[id] = p;
    }
    if (p == OpPattern::Opaque || p == OpPattern::OutEWiseFusable) continue;  // nothing fuses into these
    // Inputs with one consumer first; then those whose every consumer is in this
    // node's group by then (x in GELU's x * 0.5 * (1 + erf(x / sqrt(2)))).
    std::vector<NodeId> order;
    for (NodeId i : n.inputs)
      if (uses[i] == 1) order.push_back(i);
    for (NodeId i : n.inputs)
      if (uses[i] > 1) order.push_back(i);
    for (NodeId i : order) {
      const Node& in = g.node(i);
      if (in.is_input() || in.is_constant()) continue;
      if (uses[i] != 1) {
        bool inside = !is_output[i];
        for (NodeId u : users[i]) inside = inside && gr.find(u) == gr.find(id);
        if (!inside) continue;
      }
      int pg = gr.find(i), cg = gr.find(id);
      if (pg == cg) continue;
      OpPattern ip = pattern(i);
      if (ip == OpPattern::Opaque) continue;
      bool ok;
      if (gr.has_anchor[pg]) {
        // conv/dense/pool/reduce groups take elemwise and broadcast consumers only, and
        // the consumer's group must not have an anchor of its own.
        ok = p <= OpPattern::Broadcast && !gr.has_anchor[cg];
      } else {
        // A group of light ops fuses into light consumers and into reductions.
        ok = is_light(ip) && (is_light(p) || p == OpPattern::CommReduce);
      }
      if (!ok) continue;
      gr.parent[pg] = cg;
      if (gr.has_anchor[pg]) {
        gr.has_anchor[cg] = true;
        gr.anchor[cg] = gr.anchor[pg];
      }
    }
  }
  // Collect groups in the order of their roots (a group's last node is its root).
  std::vector<std::vector<NodeId>> members(g.size());
  for (NodeId id = 0; id < g.size(); ++id)
    if (!g.node(id).is_input() && !g.node(id).is_constant()) members[gr.find(id)].push_back(id);
  std::vector<FusedGroup> out;
  for (NodeId id = 0; id < g.size(); ++id)
    if (!members[id].empty()) out.push_back(FusedGroup{members[id]});
  return out;
}

namespace {

// Float conv2d_nchwc nodes on the host: a depthwise one, and a 1x1 one with stride 1
// and no padding over blocked (NCHWc) data.
bool is_depthwise_nchwc(const Node& n) {
  return n.op == "conv2d_nchwc" && n.attrs.get_int("depthwise", 0) && n.type.dtype == DataType::Float(32) &&
         node_target(n).empty();
}
bool is_pointwise_nchwc(const Graph& g, const Node& n) {
  if (n.op != "conv2d_nchwc" || n.attrs.get_int("depthwise", 0) || n.attrs.get_int("groups", 1) > 1 ||
      n.type.dtype != DataType::Float(32) || !node_target(n).empty())
    return false;
  const auto& w = g.type(n.inputs[1]).shape;
  auto all = [&](const char* key, int64_t v) {
    for (int64_t x : n.attrs.get_ints(key)) if (x != v) return false;
    return true;
  };
  return g.type(n.inputs[0]).ndim() == 5 && w.size() == 5 && w[2] == 1 && w[3] == 1 && all("pads", 0) && all("strides", 1);
}

// Merges into each group the group of its first node's data (inputs[0]) where that
// group ends with the data, the data has no other user (nor is an output), and
// `joins(producer, consumer)` says so; the producer's nodes go first.
template <typename Joins>
std::vector<FusedGroup> merge_data_producers(const Graph& g, std::vector<FusedGroup> groups, Joins joins) {
  std::vector<int> uses = g.use_counts();
  for (NodeId o : g.outputs()) uses[o]++;
  std::vector<int> group_of(g.size(), -1);
  for (size_t k = 0; k < groups.size(); ++k)
    for (NodeId id : groups[k].nodes) group_of[id] = static_cast<int>(k);
  std::vector<bool> merged(groups.size(), false);
  for (size_t k = 0; k < groups.size(); ++k) {
    const Node& first = g.node(groups[k].nodes.front());
    if (first.inputs.empty()) continue;
    NodeId data = first.inputs[0];
    int d = group_of[data];
    if (d < 0 || merged[d] || groups[d].root() != data || uses[data] != 1 || !joins(groups[d], groups[k])) continue;
    groups[k].nodes.insert(groups[k].nodes.begin(), groups[d].nodes.begin(), groups[d].nodes.end());
    merged[d] = true;
  }
  std::vector<FusedGroup> out;
  for (size_t k = 0; k < groups.size(); ++k)
    if (!merged[k]) out.push_back(std::move(groups[k]));
  return out;
}

}  // namespace

std::vector<FusedGroup> fuse_depthwise_pointwise(const Graph& g, std::vector<FusedGroup> groups) {
  return merge_data_producers(g, std::move(groups), [&](const FusedGroup& dg, const FusedGroup& pg) {
    if (!is_pointwise_nchwc(g, g.node(pg.nodes.front()))) return false;
    // The depthwise group: the convolution, then elementwise ops only (bias, activation).
    bool ok = is_depthwise_nchwc(g.node(dg.nodes.front()));
    for (size_t i = 1; ok && i < dg.nodes.size(); ++i) {
      const Node& n = g.node(dg.nodes[i]);
      ok = op_def(n.op).pattern <= OpPattern::Broadcast && n.type.shape == g.type(dg.nodes.front()).shape && node_target(n).empty();
    }
    return ok;
  });
}

std::vector<FusedGroup> fuse_slice_product(const Graph& g, std::vector<FusedGroup> groups) {
  return merge_data_producers(g, std::move(groups), [&](const FusedGroup& sg, const FusedGroup& pg) {
    const Node& mm = g.node(pg.nodes.front());
    const Node& slice = g.node(sg.root());
    if (mm.op != "matmul_packed" || !node_target(mm).empty() || sg.nodes.size() != 1 || slice.op != "strided_slice" ||
        !node_target(slice).empty() || g.node(slice.inputs[0]).is_constant())
      return false;
    for (int64_t step : slice.attrs.get_ints("steps"))
      if (step != 1) return false;
    return true;
  });
}

}  // namespace kiln::graph
