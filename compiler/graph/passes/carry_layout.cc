// CarryLayout: the blocked convolutions of AlterLayout hand their results on in NCHWc
// ([N, C/b, H, W, b], the layout they compute in) instead of viewing them as NCHW, so
// the next convolution, the activations, the residual adds and the pooling between
// them read and write vectors of one channel block, and NCHW comes back only at the
// edges: before an operator that needs it, and at the graph's outputs (TVM's
// AlterOpLayout with layout inference, for the operators that models put between
// convolutions).
//
// A tensor stays blocked through
//  - conv2d_nchwc (any data layout in, NCHWc out; depthwise needs its own block in;
//    one whose users take only NCHW still reads blocked data, its result a view);
//  - one-input elementwise operators (relu, clip, hard_swish, ...);
//  - add, subtract, multiply, divide, maximum, minimum and power, when an operand of
//    the output's shape is blocked and every other operand is blocked the same way (of
//    that shape or per channel, [N', C, 1, 1]: a squeeze-and-excitation's scales), a
//    scalar, a per-channel constant ([C, 1, 1] or [1, C, 1, 1], blocked here and folded
//    by FoldConstant), or an NCHW tensor of the same shape (blocked by a to_nchwc node);
//  - max_pool2d, avg_pool2d and global_avg_pool2d;
//  - concatenate along the channels, when every operand's channel count is whole blocks
//    (Inception's, GoogLeNet's and SqueezeNet's branches joined; an NCHW operand is
//    blocked by a to_nchwc node, one blocked otherwise goes through NCHW).
// Every other consumer gets the tensor back in NCHW (one from_nchwc node per tensor).
#include <map>
#include <set>

#include "compiler/graph/op.h"
#include "compiler/graph/op_util.h"
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

namespace {

bool all_ones(const std::vector<int64_t>& s) {
  for (int64_t d : s)
    if (d != 1) return false;
  return true;
}

// [N', C, 1, 1] against [N, C, H, W]: one value per channel (and batch).
bool per_channel(const std::vector<int64_t>& s, const std::vector<int64_t>& shape) {
  return s.size() == 4 && shape.size() == 4 && s[1] == shape[1] && s[2] == 1 && s[3] == 1 && (s[0] == 1 || s[0] == shape[0]);
}

class Carry {
 public:
  explicit Carry(const Graph& old) : old_(old), rw_(old), block_(old.size(), 0), users_(old.size()) {
    for (NodeId id = 0; id < old.size(); ++id)
      for (NodeId i : old.node(id).inputs) users_[i].push_back(id);
  }

  Graph run() {
    for (NodeId id = 0; id < old_.size(); ++id) {
      const Node& n = old_.node(id);
      if (n.is_input()) continue;
      if (n.is_constant()) {
        rw_.copy(id);
        continue;
      }
      if (n.op == "conv2d_nchwc" && n.type.ndim() == 4 && (keeps_blocks(id) || block_of_inputs(id))) {
        // Blocked out where a user takes it so; else viewed as NCHW in its kernel, but
        // still reading blocked data as it is.
        conv(id, keeps_blocks(id));
      } else if (block_of_inputs(id) && n.inputs.size() == 1 && n.type.ndim() == 4 &&
                 (op_def(n.op).pattern == OpPattern::ElemWise || is_pooling2d(n.op))) {
        same_layout(id, {rw_.map(n.inputs[0])}, block_[n.inputs[0]]);
      } else if (block_of_inputs(id) && is_pointwise_binary(n.op) && n.type.ndim() == 4) {
        binary(id);
      } else if (block_of_inputs(id) && is_channel_concat(n)) {
        concat(id);
      } else {
        plain_inputs(id);
      }
    }
    // The graph's outputs are NCHW, as the model declares them.
    for (NodeId o : old_.outputs())
      if (block_[o]) rw_.set(o, plain(o));
    return rw_.finish();
  }

 private:
  // Whether a user of `id` can take it blocked (else a convolution's NCHW view stays in
  // its kernel, cheaper than a from_nchwc of its own).
  bool keeps_blocks(NodeId id) const {
    for (NodeId u : users_[id]) {
      const Node& n = old_.node(u);
      if (n.type.ndim() != 4) continue;
      if (n.op == "conv2d_nchwc" || is_pointwise_binary(n.op) || (n.inputs.size() == 1 && (op_def(n.op).pattern == OpPattern::ElemWise || is_pooling2d(n.op))))
        return true;
      if (is_channel_concat(n) && whole_blocks(n, block_out(id))) return true;
    }
    return false;
  }

  // The block `id` is carried in where it is (a convolution's: its weight's).
  int64_t block_out(NodeId id) const {
    const Node& n = old_.node(id);
    return n.op == "conv2d_nchwc" ? old_.type(n.inputs[1]).shape[4] : block_[id];
  }

  bool is_channel_concat(const Node& n) const {
    return n.op == "concatenate" && n.type.ndim() == 4 && detail::normalize_axis(n.attrs.get_int("axis", 0), 4) == 1;
  }

  // Whether every operand of concatenation `n` has whole blocks of `b` channels.
  bool whole_blocks(const Node& n, int64_t b) const {
    if (b <= 0) return false;
    for (NodeId i : n.inputs)
      if (old_.type(i).shape[1] % b != 0) return false;
    return true;
  }

  // The block of the first blocked input (0: none is blocked).
  int64_t block_of_inputs(NodeId id) const {
    for (NodeId i : old_.node(id).inputs)
      if (block_[i]) return block_[i];
    return 0;
  }

  // Old node `id` in NCHW in the new graph.
  NodeId plain(NodeId id) {
    if (!block_[id]) return rw_.map(id);
    auto it = plain_.find(id);
    if (it != plain_.end()) return it->second;
    NodeId p = rw_.graph().add_op("from_nchwc", {rw_.map(id)}, {}, old_.node(id).name + ".nchw");
    plain_[id] = p;
    return p;
  }

  void plain_inputs(NodeId id) {
    const Node& n = old_.node(id);
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(plain(i));
    rw_.set(id, rw_.graph().add_op(n.op, in, n.attrs, n.name));
  }

  void same_layout(NodeId id, std::vector<NodeId> inputs, int64_t block, Attrs attrs) {
    const Node& n = old_.node(id);
    rw_.set(id, rw_.graph().add_op(n.op, std::move(inputs), std::move(attrs), n.name));
    block_[id] = block;
  }
  void same_layout(NodeId id, std::vector<NodeId> inputs, int64_t block) { same_layout(id, std::move(inputs), block, old_.node(id).attrs); }

  void conv(NodeId id, bool blocked_out) {
    const Node& n = old_.node(id);
    NodeId data = n.inputs[0];
    int64_t out_block = old_.type(n.inputs[1]).shape[4];
    NodeId x = rw_.map(data);
    // Depthwise filters each channel in its own block: data in another block goes back
    // to NCHW (the convolution blocks it again as it pads it).
    if (block_[data] && n.attrs.get_int("depthwise", 0) && block_[data] != out_block) x = plain(data);
    Attrs a = n.attrs;
    if (!blocked_out) {
      rw_.set(id, rw_.graph().add_op(n.op, {x, rw_.map(n.inputs[1])}, a, n.name));
      return;
    }
    a.set("blocked_out", int64_t{1});
    same_layout(id, {x, rw_.map(n.inputs[1])}, out_block, a);
  }

  void binary(NodeId id) {
    const Node& n = old_.node(id);
    int64_t b = block_of_inputs(id);
    const std::vector<int64_t>& shape = n.type.shape;  // [N, C, H, W]
    // Blocked as a whole only where an operand of the output's shape is.
    bool whole = false;
    for (NodeId i : n.inputs) whole = whole || (block_[i] == b && old_.type(i).shape == shape);
    if (!whole) return plain_inputs(id);
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) {
      const std::vector<int64_t>& s = old_.type(i).shape;
      // Of the output's shape, or per channel ([N', C, 1, 1]: a squeeze-and-excitation
      // block's scales, EfficientNet's and MobileNetV3's), broadcast in NCHWc as in NCHW.
      if (block_[i] == b && (s == shape || per_channel(s, shape))) {
        in.push_back(rw_.map(i));
        continue;
      }
      if (block_[i]) return plain_inputs(id);  // blocked otherwise, or broadcast otherwise
      if (all_ones(s)) {
        in.push_back(rw_.map(i));  // a scalar broadcasts against any layout
        continue;
      }
      std::vector<int64_t> s4(4 - std::min<size_t>(4, s.size()), 1);
      s4.insert(s4.end(), s.begin(), s.end());
      Graph& g = rw_.graph();
      if (per_channel(s4, shape)) {
        // Per-channel values: [N', C, 1, 1] blocked to [N', C/b, 1, 1, b].
        NodeId r = g.add_op("reshape", {rw_.map(i)}, {{"shape", s4}}, old_.node(i).name + ".nchw4");
        in.push_back(g.add_op("to_nchwc", {r}, {{"block", b}}, old_.node(i).name + ".nchwc"));
        continue;
      }
      if (s == shape) {
        in.push_back(g.add_op("to_nchwc", {rw_.map(i)}, {{"block", b}}, old_.node(i).name + ".nchwc"));
        continue;
      }
      return plain_inputs(id);
    }
    same_layout(id, in, b);
  }

  // Along the channels in the smallest block of its blocked operands ([N, C/b, H, W, b]
  // joined along C/b): NCHW operands are blocked, ones in a larger block re-blocked.
  void concat(NodeId id) {
    const Node& n = old_.node(id);
    int64_t b = 0;
    for (NodeId i : n.inputs)
      if (block_[i] && (!b || block_[i] < b)) b = block_[i];
    if (!whole_blocks(n, b)) return plain_inputs(id);
    std::vector<NodeId> in;
    for (NodeId i : n.inputs)
      in.push_back(block_[i] == b ? rw_.map(i)
                                  : rw_.graph().add_op("to_nchwc", {plain(i)}, {{"block", b}}, old_.node(i).name + ".nchwc"));
    Attrs a = n.attrs;
    a.set("axis", int64_t{1});
    same_layout(id, in, b, a);
  }

  const Graph& old_;
  GraphRewriter rw_;
  std::vector<int64_t> block_;  // per old node: its channel block in the new graph (0: NCHW)
  std::map<NodeId, NodeId> plain_;
  std::vector<std::vector<NodeId>> users_;
};

}  // namespace

Graph carry_layout(const Graph& g) { return Carry(g).run(); }

}  // namespace kiln::graph
