// FoldScaleAxis (backward): y = conv2d(x, W) * s, where W and s are constants and s
// varies only along the output channels (shape [O, 1, 1], [1, O, 1, 1] or a scalar),
// becomes conv2d(x, W * s[o]) (conv3d likewise); likewise dense(x, W) * s with s of shape [M] or [1, M].
// The convolution's result must have no other user. Together with SimplifyInference
// this folds batch norm's scale into the weights; the shift stays an add that FuseOps
// puts into the convolution's kernel.
#include <optional>

#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

namespace {

// The length-O per-channel scale of `s` for an output of type `out` with channels on
// `axis`, as a shape to broadcast over the weight (or nothing when s is not one).
std::optional<std::vector<int64_t>> channel_scale_shape(const TensorType& s, const TensorType& out, int axis,
                                                        const TensorType& weight) {
  int64_t channels = out.shape[axis];
  int rank = out.ndim();
  if (s.ndim() > rank) return std::nullopt;
  for (int d = 0; d < s.ndim(); ++d) {
    int od = rank - s.ndim() + d;
    if (s.shape[d] != 1 && !(od == axis && s.shape[d] == channels)) return std::nullopt;
  }
  // The weight's output channels are its axis 0.
  std::vector<int64_t> shape(static_cast<size_t>(weight.ndim()), 1);
  shape[0] = s.size() == 1 ? 1 : channels;
  return shape;
}

}  // namespace

Graph fold_scale_axis(const Graph& old) {
  std::vector<int> uses = old.use_counts();
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    if (n.op == "multiply" && n.inputs.size() == 2) {
      NodeId p = n.inputs[0], s = n.inputs[1];
      if (old.node(p).is_constant()) std::swap(p, s);
      const Node& prod = old.node(p);
      const Node& sc = old.node(s);
      bool foldable = sc.is_constant() && uses[p] == 1 && (prod.op == "conv2d" || prod.op == "conv3d" || prod.op == "dense") &&
                      old.node(prod.inputs[1]).is_constant() && sc.type.dtype == prod.type.dtype &&
                      !prod.attrs.has("out_dtype");
      if (foldable) {
        int axis = prod.op == "dense" ? prod.type.ndim() - 1 : 1;
        auto shape = channel_scale_shape(sc.type, prod.type, axis, old.type(prod.inputs[1]));
        if (shape) {
          Graph& g = rw.graph();
          NodeId scale = g.add_op("reshape", {rw.map(s)}, {{"shape", *shape}});
          NodeId w = g.add_op("multiply", {rw.map(prod.inputs[1]), scale});
          NodeId folded = g.add_op(prod.op, {rw.map(prod.inputs[0]), w}, prod.attrs, prod.name);
          rw.set(id, folded);
          continue;
        }
      }
    }
    rw.copy(id);
  }
  // The old producers are now unused.
  return dead_code_elimination(rw.finish());
}

}  // namespace kiln::graph
