// SimplifyInference: inference-only rewrites. batch_norm(x, gamma, beta, mean, var)
// becomes x * scale + shift with scale = gamma / sqrt(var + eps) and shift = beta -
// mean * scale, per channel (shape [C, 1, ..., 1] so it broadcasts over axis 1);
// FoldConstant then evaluates scale and shift. dropout is the identity. A float
// division by a constant becomes a product with its reciprocal (folded): a vector
// division costs many multiplications (GELU's x / sqrt(2) in BERT-base's products'
// epilogues); the result may differ in the last bit.
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

namespace {

NodeId batch_norm_as_scale_shift(GraphRewriter& rw, NodeId id) {
  Graph& g = rw.graph();
  const Node& n = rw.old().node(id);
  std::vector<NodeId> in = rw.mapped_inputs(id);
  DataType t = n.type.dtype;
  NodeId eps = g.add_scalar(n.name + ".eps", t, n.attrs.get_float("epsilon", 1e-5));
  NodeId inv_std = g.add_op("divide", {g.add_scalar(n.name + ".one", t, 1.0), g.add_op("sqrt", {g.add_op("add", {in[4], eps})})});
  NodeId scale = g.add_op("multiply", {in[1], inv_std});
  NodeId shift = g.add_op("subtract", {in[2], g.add_op("multiply", {in[3], scale})});
  // [C] -> [C, 1, ..., 1]: channels on axis 1 of x.
  std::vector<int64_t> cshape(static_cast<size_t>(n.type.ndim() - 1), 1);
  cshape[0] = n.type.shape[1];
  scale = g.add_op("reshape", {scale}, {{"shape", cshape}});
  shift = g.add_op("reshape", {shift}, {{"shape", cshape}});
  return g.add_op("add", {g.add_op("multiply", {in[0], scale}, {}, n.name + ".scale"), shift}, {}, n.name + ".shift");
}

}  // namespace

Graph simplify_inference(const Graph& old) {
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    if (n.op == "dropout") rw.set(id, rw.map(n.inputs[0]));
    else if (n.op == "batch_norm") rw.set(id, batch_norm_as_scale_shift(rw, id));
    else if (n.op == "divide" && n.type.dtype.is_float() && old.node(n.inputs[1]).is_constant() &&
             old.type(n.inputs[1]).dtype == n.type.dtype) {
      Graph& g = rw.graph();
      NodeId inv = g.add_op("divide", {g.add_scalar(n.name + ".one", n.type.dtype, 1.0), rw.map(n.inputs[1])}, {}, n.name + ".reciprocal");
      rw.set(id, g.add_op("multiply", {rw.map(n.inputs[0]), inv}, {}, n.name));
    }
    else rw.copy(id);
  }
  return rw.finish();
}

}  // namespace kiln::graph
