// AlterLayout for CPU convolutions: conv2d with a constant weight, one group (or
// depthwise) and a multiple of 8 output channels becomes conv2d_nchwc, which computes blocks of 16 (or
// 8) output channels as one vector: its weight is packed to [O/b, C, KH, KW, b] by a
// pack_conv_weight node that FoldConstant evaluates at compile time. Activations stay
// NCHW between operators (the blocked result is viewed as NCHW inside the kernel).
// Dense layers with constant weights become matmuls with the weight pre-transposed.
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

Graph alter_layout(const Graph& old) {
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    int64_t groups = n.attrs.get_int("groups", 1);
    bool depthwise = groups > 1 && n.op == "conv2d" && groups == old.type(n.inputs[0]).shape[1] && groups == n.type.shape[1];
    if (n.op == "conv2d" && (groups == 1 || depthwise) && old.node(n.inputs[1]).is_constant() &&
        n.type.dtype == DataType::Float(32)) {
      int64_t o = n.type.shape[1];
      int64_t block = o % 16 == 0 ? 16 : o % 8 == 0 ? 8 : 0;
      if (block) {
        Graph& g = rw.graph();
        NodeId w = g.add_op("pack_conv_weight", {rw.map(n.inputs[1])}, {{"block", block}}, n.name + ".packed_weight");
        Attrs b;
        for (const auto& [k, v] : n.attrs.map())
          if (k != "groups") b.set(k, v);
        if (depthwise) b.set("depthwise", int64_t{1});
        rw.set(id, g.add_op("conv2d_nchwc", {rw.map(n.inputs[0]), w}, b, n.name));
        continue;
      }
    }
    if (n.op == "dense" && old.node(n.inputs[1]).is_constant() && n.type.dtype == DataType::Float(32)) {
      // dense(x, W[M, K]) reads W across its rows when vectorized over M; a matmul with
      // the transposed weight [K, M] (transposed at compile time) reads it contiguously.
      Graph& g = rw.graph();
      NodeId wt = g.add_op("transpose", {rw.map(n.inputs[1])}, {{"perm", std::vector<int64_t>{1, 0}}}, n.name + ".weight_t");
      rw.set(id, g.add_op("matmul", {rw.map(n.inputs[0]), wt}, n.attrs, n.name));
      continue;
    }
    rw.copy(id);
  }
  return rw.finish();
}

}  // namespace kiln::graph
