// AlterLayoutInt8 for the host CPU: an int8 conv2d (one group), dense or 2-d matmul
// with a constant int8 weight and int32 accumulation becomes conv2d_nchwc_int8 /
// dense_int8 (ops_int8.cc), whose weight is packed into 4-byte words by a
// pack_int8_weight node and whose offset (128 * sum of the weights, for int8 data) is an
// int8_weight_offset node; FoldConstant evaluates both at compile time. It runs after
// placement: nodes marked for an accelerator keep their layout, and so does anything an
// accelerator's strategy has still to recognize.
#include "compiler/graph/ops_quant.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/graph/strategy.h"

namespace kiln::graph {

namespace {

bool is_byte(DataType t) { return t == DataType::Int(8) || t == DataType::UInt(8); }

// conv2d / dense / matmul of int8 or uint8 data by a constant int8 weight into int32.
bool is_int8_product(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || !node_target(n).empty() || !has_out_dtype(n.attrs)) return false;
  if (n.type.dtype != DataType::Int(32)) return false;
  const Node& w = g.node(n.inputs[1]);
  return is_byte(g.type(n.inputs[0]).dtype) && w.is_constant() && w.type.dtype == DataType::Int(8);
}

}  // namespace

Graph alter_layout_int8(const Graph& old) {
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    if (!is_int8_product(old, n)) {
      rw.copy(id);
      continue;
    }
    bool conv = n.op == "conv2d" && n.attrs.get_int("groups", 1) == 1;
    bool dense = n.op == "dense";
    bool matmul = n.op == "matmul" && n.type.ndim() == 2 && old.type(n.inputs[0]).ndim() == 2;
    if (!conv && !dense && !matmul) {
      rw.copy(id);
      continue;
    }
    Graph& g = rw.graph();
    NodeId x = rw.map(n.inputs[0]), w = rw.map(n.inputs[1]);
    std::string layout = conv ? "conv" : dense ? "dense" : "dense_t";
    std::vector<NodeId> in{x, g.add_op("pack_int8_weight", {w}, {{"layout", layout}}, n.name + ".packed_weight")};
    if (g.type(x).dtype == DataType::Int(8))
      in.push_back(g.add_op("int8_weight_offset", {w}, {{"axis", int64_t{matmul ? 1 : 0}}}, n.name + ".weight_offset"));
    Attrs a;
    if (conv) {
      for (const char* k : {"strides", "pads", "dilations"})
        if (n.attrs.has(k)) a.set(k, n.attrs.get_ints(k));
      a.set("channels", n.type.shape[1]);
    } else {
      a.set("units", n.type.shape[1]);
    }
    rw.set(id, g.add_op(conv ? "conv2d_nchwc_int8" : "dense_int8", in, a, n.name));
  }
  return dead_code_elimination(fold_constant(rw.finish()));
}

}  // namespace kiln::graph
