// Winograd: a 3x3 convolution of stride 1 whose data and result are blocked (CarryLayout's
// conv2d_nchwc with NCHWc in and out, float) becomes conv2d_winograd (ops_winograd.cc),
// its weight transformed here at compile time, where its output has at least 14x14
// pixels: in tiles of 4x4 where they divide the image (F(4x4, 3x3): 4x fewer
// multiplies), else of 2x2 (2.25x fewer). Measured on ResNet-18's 3x3 convolutions
// here, one thread: 56x56x64 and 28x28x128 1.06 -> 0.40-0.50 ms with tiles of 4 (0.63-0.76
// with tiles of 2), 14x14x256 1.1 -> 0.72 ms with tiles of 2 (0.82-0.91 with tiles of 4,
// the last row and column of tiles half empty). 7x7x512 keeps the direct convolution:
// its transformed weight (16/9 or 4x the direct one) would be read for 4 to 16 tiles,
// from memory.
#include "compiler/graph/passes/passes.h"
#include "compiler/graph/winograd.h"

namespace kiln::graph {

namespace {

bool applies(const Graph& g, const Node& n) {
  if (n.op != "conv2d_nchwc" || n.attrs.get_int("depthwise", 0) || n.attrs.get_int("groups", 1) > 1 || n.type.ndim() != 5 ||
      n.type.dtype != DataType::Float(32))
    return false;
  if (g.type(n.inputs[0]).ndim() != 5) return false;
  const Node& pack = g.node(n.inputs[1]);
  if (pack.op != "pack_conv_weight" || !g.node(pack.inputs[0]).is_constant()) return false;
  const auto& w = g.type(pack.inputs[0]).shape;
  if (w.size() != 4 || w[2] != winograd::kKernel || w[3] != winograd::kKernel) return false;
  if (n.attrs.get_ints("strides", {1, 1}) != std::vector<int64_t>{1, 1}) return false;
  if (n.attrs.get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return false;
  int64_t oh = n.type.shape[2], ow = n.type.shape[3];
  return oh * ow >= 14 * 14;
}

}  // namespace

Graph winograd_conv(const Graph& old) {
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    if (!n.is_constant() && applies(old, n)) {
      Graph& g = rw.graph();
      const Node& weight = old.node(old.node(n.inputs[1]).inputs[0]);
      int tile = winograd::default_tile(n.type.shape[2], n.type.shape[3]);
      NodeId u = g.add_constant(n.name + ".winograd_weight", winograd::transform_weight(*weight.value, tile));
      Attrs a{{"pads", n.attrs.get_ints("pads", {0, 0, 0, 0})}, {"block", n.type.shape[4]}, {"tile", int64_t{tile}}};
      rw.set(id, g.add_op("conv2d_winograd", {rw.map(n.inputs[0]), u}, a, n.name));
      continue;
    }
    rw.copy(id);
  }
  return rw.finish();
}

}  // namespace kiln::graph
