// SinkReshape: a binary pointwise operator on a reshaped tensor runs before the reshape
// instead of after it, when the reshape keeps the last axis:
//
//   add(reshape(matmul(x, w)) [1, 128, 768], bias [768])
//     -> reshape(add(matmul(x, w) [128, 768], bias [768])) [1, 128, 768]
//
// ONNX exporters put a Linear layer on a [batch, tokens, features] tensor as a 2-d
// product between two reshapes and its bias add (and the residual add after it) on the
// 3-d side, where FuseOps cannot take them into the product's epilogue (a reshape is
// injective, and a product takes elementwise and broadcast consumers only). Sunk, the
// adds are computed from the product's register tile and the reshape is a view (the
// executor gives a lone reshape no kernel).
//
// The op is any of is_pointwise_binary's (op.h). Its other operand must broadcast
// along the last axis only (a vector of its length or a scalar, reshaped to that) or
// have the result's shape (then it is reshaped to the product's, a view too).
// One-input elementwise operators (erf, relu, clip, ...) sink through any reshape, and
// a reshape of a reshape is one reshape (none where the shape comes back), so a GELU
// after a product sinks whole and FuseOps can take it, with the bias, into the
// product's epilogue (the product's output then has several consumers, all in one
// group).
#include "compiler/graph/op.h"
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

namespace {

// out[i] = f(in[i]), whatever the shape: one input, no axis.
bool unary_elementwise(const Node& n) {
  return !n.is_input() && !n.is_constant() && n.inputs.size() == 1 && op_def(n.op).pattern == OpPattern::ElemWise && !n.attrs.has("axis") &&
         !n.attrs.has("axes");
}

}  // namespace

Graph sink_reshape(const Graph& old) {
  GraphRewriter rw(old);
  Graph& g = rw.graph();
  auto reshape = [&](NodeId x, const std::vector<int64_t>& shape, const std::string& name) {
    if (g.type(x).shape == shape) return x;
    // A reshape of a reshape is one reshape of the first one's input.
    if (g.node(x).op == "reshape") x = g.node(x).inputs[0];
    if (g.type(x).shape == shape) return x;
    return g.add_op("reshape", {x}, {{"shape", shape}}, name);
  };
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    if (n.is_constant()) {
      rw.copy(id);
      continue;
    }
    if (is_pointwise_binary(n.op) && n.inputs.size() == 2 && n.type.ndim() >= 1) {
      // The operand that is a sinkable reshape, if any.
      NodeId in[2] = {rw.map(n.inputs[0]), rw.map(n.inputs[1])};
      int side = -1;
      for (int s = 0; s < 2 && side < 0; ++s) {
        const Node& r = g.node(in[s]);
        if (r.op != "reshape") continue;
        const Node& x = g.node(r.inputs[0]);
        const auto& xs = x.type.shape;
        if (x.is_input() || x.is_constant() || xs.empty() || r.type.shape != n.type.shape ||
            xs.back() != n.type.shape.back())
          continue;
        side = s;
      }
      if (side >= 0) {
        NodeId x = g.node(in[side]).inputs[0];
        const std::vector<int64_t> xs = g.type(x).shape;
        const TensorType& other = g.type(in[1 - side]);
        int64_t last = n.type.shape.back();
        NodeId o = -1;
        bool vector = other.size() == last && (other.ndim() == 0 || other.shape.back() == last);
        if (other.ndim() == 0) {
          o = in[1 - side];
        } else if (other.shape == n.type.shape) {
          o = reshape(in[1 - side], xs, n.name + ".sunk_operand");
        } else if (vector || other.size() == 1) {
          // A vector along the last axis or a scalar: rank 1 broadcasts against any.
          o = reshape(in[1 - side], {other.size()}, n.name + ".sunk_operand");
        }
        if (o >= 0) {
          std::vector<NodeId> ins = side == 0 ? std::vector<NodeId>{x, o} : std::vector<NodeId>{o, x};
          NodeId y = g.add_op(n.op, ins, n.attrs, n.name);
          rw.set(id, g.add_op("reshape", {y}, {{"shape", n.type.shape}}, n.name + ".reshape"));
          continue;
        }
      }
    }
    auto under_reshape = [&](NodeId mapped) {  // what a reshape of a computed tensor reads
      const Node& r = g.node(mapped);
      return r.op == "reshape" && !g.node(r.inputs[0]).is_input() && !g.node(r.inputs[0]).is_constant();
    };
    if (n.op == "reshape" && under_reshape(rw.map(n.inputs[0]))) {
      rw.set(id, reshape(rw.map(n.inputs[0]), n.type.shape, n.name));
      continue;
    }
    if (unary_elementwise(n) && under_reshape(rw.map(n.inputs[0]))) {
      NodeId y = g.add_op(n.op, {g.node(rw.map(n.inputs[0])).inputs[0]}, n.attrs, n.name);
      rw.set(id, g.add_op("reshape", {y}, {{"shape", n.type.shape}}, n.name + ".reshape"));
      continue;
    }
    rw.copy(id);
  }
  return rw.finish();
}

}  // namespace kiln::graph
