// AlterLayout for CPU convolutions: conv2d with a constant weight and a multiple of 8
// output channels (each group's, when grouped and not depthwise) becomes conv2d_nchwc,
// which computes blocks of 16 (or 8) output channels as one vector: its weight is
// packed to [O/b, C/groups, KH, KW, b] by a pack_conv_weight node that FoldConstant
// evaluates at compile time. Its result is viewed as NCHW inside the kernel;
// CarryLayout (carry_layout.cc) then keeps it blocked where the operators after it can
// take it so.
// Dense layers and 2-d matmuls with a constant float weight become matmul_packed,
// their weight packed at compile time in panels of b columns, b from the target's
// vector width and register count (register_tile_columns); where no panel width
// divides the columns, a dense layer becomes a matmul with the weight transposed. A
// reduction too long for the rows, or a panel of the weight, to stay in L2 is split
// into chunks (reduction_chunk).
#include <fmt/format.h>

#include <algorithm>

#include "compiler/graph/passes/passes.h"
#include "support/integer.h"

namespace kiln::graph {

int64_t conv_channel_block(int64_t out_channels, bool grouped) {
  if (out_channels % 16 == 0) return 16;
  if (out_channels % 8 == 0) return 8;
  // ResNeXt's first groups of 4 channels: a quarter of a vector, still 5.6x the plain
  // loop nest (its 128-channel 3x3 convolution at 32x32: 1.66 -> 0.30 ms, one thread).
  return grouped && out_channels % 4 == 0 ? 4 : 0;
}

int64_t register_tile_columns(int64_t n, const target::MachineTraits& m) {
  int64_t lanes = m.lanes(32), widest = (m.vector_registers >= 32 ? 4 : 2) * lanes;
  if (n <= widest) return n;
  int64_t best = 0;
  for (int64_t d = widest; d >= 1 && !best; --d)
    if (n % d == 0 && d % lanes == 0) best = d;
  for (int64_t d = widest; d >= std::max<int64_t>(1, lanes / 2) && !best; --d)
    if (n % d == 0 && d % std::max<int64_t>(1, lanes / 2) == 0) best = d;
  return best;
}

int64_t register_tile_rows(int64_t panel, const target::MachineTraits& m) {
  int64_t lanes = m.lanes(32), vectors = ceil_div(panel, lanes);
  return std::clamp<int64_t>(m.vector_registers / 2 / std::max<int64_t>(1, vectors), 1, 8);
}

int64_t reduction_chunk(int64_t m, int64_t k, int64_t panel, const target::MachineTraits& machine) {
  // The rows' chunk (m x chunk floats) should take at most half of L2, beside a block
  // of the weight's panel (chunk x panel floats), which should take at most a quarter.
  int64_t row_budget = machine.l2_bytes / 2 / 4, panel_budget = machine.l2_bytes / 4 / 4;
  auto rows_fit = [&](int64_t c) { return m * c <= row_budget; };
  auto panel_fits = [&](int64_t c) { return c * panel <= panel_budget; };
  // The longest chunk of at least 512 (shorter ones cost more in passes over the
  // output) that satisfies `ok`, or 0.
  auto longest = [&](auto ok) -> int64_t {
    for (int64_t c = 1; c <= k; ++c) {
      if (k % c) continue;
      if (k / c < 512 && c > 1) break;
      if (ok(k / c)) return k / c;
    }
    return 0;
  };
  if (int64_t c = longest([&](int64_t c) { return rows_fit(c) && panel_fits(c); })) return c;
  // Rows too many to fit beside any chunk (they stream from L3 once per panel; blocking
  // them measured no gain here): the weight's block decides, keeping a panel in L2
  // (MatMul 4096 on one thread here: 764 ms whole, 665 ms in chunks of 1024); on a
  // cache too small for that, the rows.
  if (int64_t c = longest(panel_fits)) return c;
  if (int64_t c = longest(rows_fit)) return c;
  return k;
}

bool rows_take_partial_tiles(int64_t rows, int64_t tile) { return rows > tile && 2 * largest_divisor_at_most(rows, tile) < tile; }

namespace {

// A product of two tensors ([..., M, K] by [..., K, N], no constant to pack: attention's
// products) whose N has no panel of whole vectors, or whose M has no divisor near the
// register tile's rows (ViT's 197 tokens), ran as a plain loop nest or a row a tile:
// computed on zero-padded operands (N up to whole panels of two vectors, M up to whole
// tiles) and sliced back; -1 where neither applies. ViT-B/16's attention products at
// one thread here: 252 -> 8.7 ms in all. (A dense layer's rows take a partial last
// tile instead: default_gemm_tile.)
NodeId pad_product(GraphRewriter& rw, NodeId id, const target::MachineTraits& machine) {
  const Graph& old = rw.old();
  const Node& n = old.node(id);
  const std::vector<int64_t>& shape = n.type.shape;
  size_t r = shape.size();
  if (r < 2) return -1;
  int64_t m = shape[r - 2], cols = shape[r - 1], lanes = machine.lanes(32);
  int64_t np = cols, mp = m;
  if (cols > lanes && register_tile_columns(cols, machine) == 0) np = round_up(cols, cols >= 2 * lanes ? 2 * lanes : lanes);
  int64_t panel = register_tile_columns(np, machine);
  if (panel == 0 || panel % lanes) return -1;
  if (int64_t tile = register_tile_rows(panel, machine); rows_take_partial_tiles(m, tile)) mp = round_up(m, tile);
  if (np == cols && mp == m) return -1;
  Graph& g = rw.graph();
  auto pad_axis = [&](NodeId x, size_t axis, int64_t extra, const char* what) {
    if (extra == 0) return x;
    std::vector<int64_t> pads(2 * r, 0);
    pads[r + axis] = extra;
    return g.add_op("pad", {x}, {{"pads", pads}, {"value", 0.0}}, n.name + what);
  };
  NodeId a = pad_axis(rw.map(n.inputs[0]), r - 2, mp - m, ".rows");
  NodeId b = pad_axis(rw.map(n.inputs[1]), r - 1, np - cols, ".cols");
  NodeId y = g.add_op("matmul", {a, b}, n.attrs, n.name);
  std::vector<int64_t> begin(r, 0), steps(r, 1);
  return g.add_op("strided_slice", {y}, {{"begin", begin}, {"end", shape}, {"steps", steps}}, n.name + ".sliced");
}

}  // namespace

Graph alter_layout(const Graph& old, const target::MachineTraits& machine) {
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    int64_t groups = n.attrs.get_int("groups", 1);
    bool depthwise = groups > 1 && n.op == "conv2d" && groups == old.type(n.inputs[0]).shape[1] && groups == n.type.shape[1];
    if (n.op == "conv2d" && old.node(n.inputs[1]).is_constant() && n.type.dtype == DataType::Float(32)) {
      // Grouped: blocks inside a group.
      bool grouped = groups > 1 && !depthwise;
      if (int64_t block = conv_channel_block(grouped ? n.type.shape[1] / groups : n.type.shape[1], grouped)) {
        Graph& g = rw.graph();
        NodeId w = g.add_op("pack_conv_weight", {rw.map(n.inputs[1])}, {{"block", block}}, n.name + ".packed_weight");
        Attrs b;
        for (const auto& [k, v] : n.attrs.map())
          if (k != "groups" || grouped) b.set(k, v);
        if (depthwise) b.set("depthwise", int64_t{1});
        rw.set(id, g.add_op("conv2d_nchwc", {rw.map(n.inputs[0]), w}, b, n.name));
        continue;
      }
    }
    bool dense = n.op == "dense", matmul = n.op == "matmul" && n.type.ndim() == 2 && old.type(n.inputs[1]).ndim() == 2;
    if ((dense || matmul) && old.node(n.inputs[1]).is_constant() && n.type.dtype == DataType::Float(32) &&
        old.type(n.inputs[0]).dtype == n.type.dtype && old.type(n.inputs[1]).dtype == n.type.dtype) {
      if (int64_t b = register_tile_columns(n.type.shape[1], machine)) {
        Graph& g = rw.graph();
        NodeId w = g.add_op("pack_matmul_weight", {rw.map(n.inputs[1])}, {{"block", b}, {"layout", std::string(dense ? "nk" : "kn")}},
                            n.name + ".packed_weight");
        NodeId x = rw.map(n.inputs[0]);
        int64_t m = n.type.shape[0], k = old.type(n.inputs[0]).shape[1];
        int64_t chunk = reduction_chunk(m, k, b, machine);
        if (chunk == k) {
          rw.set(id, g.add_op("matmul_packed", {x, w}, {}, n.name));
          continue;
        }
        // Too long a reduction for the rows to stay in L2 while every panel of the weight
        // passes them: partial products over chunks of k, each added to the last (the add
        // is the next product's fused epilogue).
        NodeId y = -1;
        for (int64_t c = 0; c < k / chunk; ++c) {
          Attrs xs{{"begin", std::vector<int64_t>{0, c * chunk}}, {"end", std::vector<int64_t>{m, (c + 1) * chunk}},
                   {"steps", std::vector<int64_t>{1, 1}}};
          int64_t panels = n.type.shape[1] / b;
          Attrs ws{{"begin", std::vector<int64_t>{0, c * chunk, 0}}, {"end", std::vector<int64_t>{panels, (c + 1) * chunk, b}},
                   {"steps", std::vector<int64_t>{1, 1, 1}}};
          std::string part = fmt::format("{}.k{}", n.name, c);
          NodeId p = g.add_op("matmul_packed", {g.add_op("strided_slice", {x}, xs, part + ".x"), g.add_op("strided_slice", {w}, ws, part + ".w")},
                              {}, part);
          y = y < 0 ? p : g.add_op("add", {p, y}, {}, part + ".sum");
        }
        rw.set(id, y);
        continue;
      }
    }
    if (n.op == "matmul" && n.type.dtype == DataType::Float(32) && !n.attrs.has("out_dtype") && old.type(n.inputs[0]).ndim() == n.type.ndim() &&
        old.type(n.inputs[1]).ndim() == n.type.ndim() && old.type(n.inputs[0]).dtype == n.type.dtype && old.type(n.inputs[1]).dtype == n.type.dtype) {
      if (NodeId y = pad_product(rw, id, machine); y >= 0) {
        rw.set(id, y);
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
