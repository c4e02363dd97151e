// FoldExplicitPadding: a zero `pad` of the rows and columns only, read by a 2-d
// convolution or an average pool, becomes that operator's own padding (TVM's pass of
// the same name). Exporters write one where the framework's padding has no ONNX
// attribute: PyTorch's avg_pool2d counting the padding (Inception-V3's branches: Pad,
// then AveragePool with count_include_pad=0), TensorFlow's "SAME" padding. The padded
// copy is gone, and the convolution stays one that alter_layout blocks and carry_layout
// keeps blocked (a pad is neither, so NCHWc data went back to NCHW for it).
//  - conv2d: pads added to its own.
//  - avg_pool2d: pads added, counted in the divisor (count_include_pad=1), when it
//    counted its own padding or had none, and without ceil_mode (whose last window may
//    pass the padded edge, which the explicit zeros did not count).
// A pad with other readers stays for them.
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

namespace {

// The [top, left, bottom, right] padding of a zero pad of a 4-d float tensor's rows and
// columns only (empty: `n` is not one).
std::vector<int64_t> spatial_zero_pads(const Node& n) {
  if (n.op != "pad" || n.type.ndim() != 4 || !n.type.dtype.is_float() || n.attrs.get_float("value", 0.0) != 0.0) return {};
  std::vector<int64_t> p = n.attrs.get_ints("pads", {});
  if (p.size() != 8 || p[0] || p[1] || p[4] || p[5]) return {};
  for (int64_t v : p)
    if (v < 0) return {};
  return {p[2], p[3], p[6], p[7]};
}

}  // namespace

Graph fold_explicit_padding(const Graph& old) {
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    bool conv = n.op == "conv2d", pool = n.op == "avg_pool2d";
    std::vector<int64_t> extra;
    if ((conv || pool) && !n.inputs.empty()) extra = spatial_zero_pads(old.node(n.inputs[0]));
    std::vector<int64_t> own = n.attrs.get_ints("pads", {0, 0, 0, 0});
    if (pool) {
      bool own_zero = true;
      for (int64_t v : own) own_zero = own_zero && v == 0;
      if (n.attrs.get_int("ceil_mode", 0) || (!own_zero && !n.attrs.get_int("count_include_pad", 0))) extra.clear();
    }
    if (extra.empty() || own.size() != 4) {
      rw.copy(id);
      continue;
    }
    Attrs a = n.attrs;
    for (size_t k = 0; k < 4; ++k) own[k] += extra[k];
    a.set("pads", own);
    if (pool) a.set("count_include_pad", int64_t{1});
    std::vector<NodeId> in = rw.mapped_inputs(id);
    in[0] = rw.map(old.node(n.inputs[0]).inputs[0]);
    rw.set(id, rw.graph().add_op(n.op, in, a, n.name));
  }
  return rw.finish();
}

}  // namespace kiln::graph
