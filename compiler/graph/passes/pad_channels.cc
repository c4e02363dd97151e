// PadChannels: a float convolution whose output channels are not a multiple of the
// vector width (24 on AVX-512) gets zero filters up to the next multiple (32), so
// AlterLayout blocks it in whole vectors: MobileNetV2's 24-channel projections ran at
// half the FMA rate in blocks of 8 (144 -> 24 at 56x56: 263 us, ONNX Runtime, which pads
// so too, 138), and ShuffleNetV2's 58 and 116 channels, not multiples of 8, were not
// blocked at all (the model 1.98x ONNX Runtime's time at one thread, 0.65 padded). Not
// one half vector (8 on AVX-512, blocked as it is), nor fewer channels (a head's few).
// The padded channels hold zeros, and stay zero through the operators that keep zeros
// (bias and residual adds, ReLU-like activations, pooling); a convolution that reads
// them gets zero weights for them; any other consumer, and the graph's outputs, read
// the real channels through a slice. A constant that has to grow is padded by a `pad`
// node, which FoldConstant folds.
#include <map>

#include "compiler/graph/op.h"
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

namespace {

// One-input operators with f(0) == 0.
bool keeps_zero(const Node& n) {
  if (n.op == "relu" || n.op == "leaky_relu" || n.op == "hard_swish" || n.op == "tanh" || n.op == "negative" ||
      n.op == "abs" || n.op == "identity" || n.op == "dropout")
    return true;
  return n.op == "clip" && n.attrs.get_float("min", 0) <= 0 && n.attrs.get_float("max", 0) >= 0;
}

// Binary operators with f(0, 0) == 0 (multiply also with any finite other operand).
bool keeps_zero_binary(const std::string& op) {
  return op == "add" || op == "subtract" || op == "multiply" || op == "maximum" || op == "minimum";
}

class Pad {
 public:
  Pad(const Graph& old, int64_t lanes) : old_(old), rw_(old), real_(old.size(), 0), lanes_(lanes) {}

  Graph run() {
    for (NodeId id = 0; id < old_.size(); ++id) {
      const Node& n = old_.node(id);
      if (n.is_input()) continue;
      if (n.is_constant()) {
        rw_.copy(id);
      } else if (n.op == "conv2d") {
        conv(id);
      } else if (padded_input(id) && n.inputs.size() == 1 && n.type.ndim() == 4 && (keeps_zero(n) || is_pooling2d(n.op))) {
        rw_.set(id, add(n, {rw_.map(n.inputs[0])}, n.attrs));
        real_[id] = real_[n.inputs[0]];
      } else if (padded_input(id) && keeps_zero_binary(n.op) && n.type.ndim() == 4) {
        binary(id);
      } else {
        real_inputs(id);
      }
    }
    for (NodeId o : old_.outputs())
      if (real_[o]) rw_.set(o, real(o));
    return rw_.finish();
  }

 private:
  bool padded_input(NodeId id) const {
    for (NodeId i : old_.node(id).inputs)
      if (real_[i]) return true;
    return false;
  }

  NodeId add(const Node& n, std::vector<NodeId> inputs, Attrs attrs) {
    return rw_.graph().add_op(n.op, std::move(inputs), std::move(attrs), n.name);
  }

  // New node `x` zero-padded by `extra` at the end of dimension `axis`.
  NodeId pad(NodeId x, int axis, int64_t extra, const std::string& name) {
    int r = rw_.graph().type(x).ndim();
    std::vector<int64_t> pads(2 * r, 0);
    pads[r + axis] = extra;
    return rw_.graph().add_op("pad", {x}, {{"pads", pads}, {"value", 0.0}}, name + ".padded");
  }

  // Old node `id` with its real channels only (a slice of the padded tensor, made once).
  NodeId real(NodeId id) {
    if (!real_[id]) return rw_.map(id);
    auto it = sliced_.find(id);
    if (it != sliced_.end()) return it->second;
    const std::vector<int64_t>& s = old_.type(id).shape;
    std::vector<int64_t> end = s;
    Attrs a{{"begin", std::vector<int64_t>(s.size(), 0)}, {"end", end}, {"steps", std::vector<int64_t>(s.size(), 1)}};
    NodeId r = rw_.graph().add_op("strided_slice", {rw_.map(id)}, a, old_.node(id).name + ".channels");
    sliced_[id] = r;
    return r;
  }

  void real_inputs(NodeId id) {
    const Node& n = old_.node(id);
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(real(i));
    rw_.set(id, add(n, in, n.attrs));
  }

  // The output channels `o` a float convolution is padded to (o: not padded): up to
  // whole vectors, unless they are whole already, or one half vector (8 on AVX-512,
  // blocked as it is), or fewer (a head's few classes).
  int64_t padded_channels(int64_t o) const {
    int64_t half = lanes_ / 2;
    if (half < 1 || o <= half || o % lanes_ == 0) return o;
    if (o < lanes_ && o % half == 0) return o;
    return (o + lanes_ - 1) / lanes_ * lanes_;
  }

  void conv(NodeId id) {
    const Node& n = old_.node(id);
    NodeId data = n.inputs[0], weight = n.inputs[1];
    const std::vector<int64_t>& ws = old_.type(weight).shape;  // [O, C/g, KH, KW]
    int64_t groups = n.attrs.get_int("groups", 1), o = n.type.shape[1];
    bool constant = old_.node(weight).is_constant() && n.type.dtype == DataType::Float(32) && n.type.ndim() == 4;
    int64_t c = old_.type(data).ndim() == 4 ? old_.type(data).shape[1] : 0;
    bool depthwise = groups > 1 && groups == c && groups == o && ws[1] == 1;
    if (!constant || (groups != 1 && !depthwise)) return real_inputs(id);
    NodeId x = rw_.map(data), w = rw_.map(weight);
    Attrs a = n.attrs;
    int64_t padded_o = o;
    if (depthwise) {
      // Each padded channel is its own group with a zero filter.
      if (!real_[data]) return real_inputs(id);
      padded_o = rw_.graph().type(x).shape[1];
      w = pad(w, 0, padded_o - o, n.name);
      a.set("groups", padded_o);
    } else {
      if (real_[data]) w = pad(w, 1, rw_.graph().type(x).shape[1] - c, n.name);
      padded_o = padded_channels(o);
      if (padded_o != o) w = pad(w, 0, padded_o - o, n.name);
    }
    rw_.set(id, add(n, {x, w}, a));
    if (padded_o != o) real_[id] = o;
  }

  void binary(NodeId id) {
    const Node& n = old_.node(id);
    const std::vector<int64_t>& shape = n.type.shape;  // [N, C, H, W]
    int64_t c = shape[1];
    NodeId first = -1;
    for (NodeId i : n.inputs)
      if (real_[i]) first = i;
    int64_t padded_c = rw_.graph().type(rw_.map(first)).shape[1];
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) {
      const std::vector<int64_t>& s = old_.type(i).shape;
      if (real_[i] && s == shape) {
        in.push_back(rw_.map(i));
        continue;
      }
      if (real_[i] || !old_.node(i).is_constant() || s.size() > 4) return real_inputs(id);
      // A constant broadcast along the channels: [C, 1, 1] or [1, C, 1, 1] grows with
      // zeros; one value for all channels only multiplies (0 * s is 0).
      int axis = static_cast<int>(s.size()) - 3;
      bool per_channel = axis >= 0 && s[axis] == c;
      for (size_t d = 0; d < s.size(); ++d)
        if (static_cast<int>(d) != axis && s[d] != 1) return real_inputs(id);
      if (per_channel) {
        in.push_back(pad(rw_.map(i), axis, padded_c - c, old_.node(i).name));
      } else if (n.op == "multiply" && (axis < 0 || s[axis] == 1)) {
        in.push_back(rw_.map(i));
      } else {
        return real_inputs(id);
      }
    }
    rw_.set(id, add(n, in, n.attrs));
    real_[id] = c;
  }

  const Graph& old_;
  GraphRewriter rw_;
  std::vector<int64_t> real_;  // per old node: its real channels when padded, else 0
  std::map<NodeId, NodeId> sliced_;
  int64_t lanes_;
};

}  // namespace

Graph pad_channels(const Graph& g, const target::MachineTraits& machine) { return Pad(g, machine.lanes(32)).run(); }

}  // namespace kiln::graph
