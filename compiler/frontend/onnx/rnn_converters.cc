// Converters of ONNX's recurrent layers (RNN, GRU, LSTM). Kiln's shapes are static, so
// the sequence length is known and every layer is unrolled over its time steps into
// ordinary graph operators: one dense of all steps' inputs against W, then per step a
// dense of the state against R, the gates' slices, their activations and the update.
// Per-batch sequence_lens shorter than the sequence mask the steps past their end: the
// state is held (Y_h is the last valid step's) and Y is 0 there.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "compiler/frontend/onnx/importer.h"
#include "compiler/support/error.h"

namespace kiln::frontend {

namespace {

enum class Cell { Rnn, Gru, Lstm };

// An activation function of a cell with its alpha and beta (ONNX's defaults where the
// node lists none).
struct Activation {
  std::string name;  // as ONNX spells it
  double alpha = 0, beta = 0;
};

// The activations a function name takes from activation_alpha / activation_beta, and
// their defaults (those of the ONNX operators of the same name).
struct ActivationInfo {
  int alphas, betas;
  double alpha, beta;
};

std::optional<ActivationInfo> activation_info(const std::string& name) {
  if (name == "Relu" || name == "Tanh" || name == "Sigmoid" || name == "Softsign" || name == "Softplus")
    return ActivationInfo{0, 0, 0, 0};
  if (name == "LeakyRelu") return ActivationInfo{1, 0, 0.01, 0};
  if (name == "ThresholdedRelu") return ActivationInfo{1, 0, 1.0, 0};
  if (name == "Elu") return ActivationInfo{1, 0, 1.0, 0};
  if (name == "Affine") return ActivationInfo{1, 1, 1.0, 0.0};
  if (name == "ScaledTanh") return ActivationInfo{1, 1, 1.0, 1.0};
  if (name == "HardSigmoid") return ActivationInfo{1, 1, 0.2, 0.5};
  return std::nullopt;
}

// ONNX compares activation names case-insensitively; this gives the spelling above.
std::string canonical_activation(const std::string& s) {
  static const char* kNames[] = {"Relu",   "Tanh",       "Sigmoid",    "Softsign",   "Softplus",   "LeakyRelu",
                                 "Elu",    "Affine",     "ScaledTanh", "HardSigmoid", "ThresholdedRelu"};
  auto lower = [](std::string v) {
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return v;
  };
  for (const char* n : kNames)
    if (lower(n) == lower(s)) return n;
  return s;
}

NodeId activate(Importer& c, const Activation& a, NodeId x) {
  DataType t = c.type(x).dtype;
  if (a.name == "Relu") return c.op("relu", {x});
  if (a.name == "Tanh") return c.op("tanh", {x});
  if (a.name == "Sigmoid") return c.op("sigmoid", {x});
  if (a.name == "Softsign") return c.op("softsign", {x});
  if (a.name == "Softplus") return c.op("softplus", {x});
  if (a.name == "LeakyRelu") return c.op("leaky_relu", {x}, {{"alpha", a.alpha}});
  if (a.name == "ThresholdedRelu") return c.op("thresholded_relu", {x}, {{"alpha", a.alpha}});
  if (a.name == "Elu") return c.op("elu", {x}, {{"alpha", a.alpha}});
  if (a.name == "HardSigmoid") return c.op("hard_sigmoid", {x}, {{"alpha", a.alpha}, {"beta", a.beta}});
  if (a.name == "Affine") return c.op("add", {c.op("multiply", {x, c.scalar(t, a.alpha)}), c.scalar(t, a.beta)});
  // ScaledTanh: alpha * tanh(beta * x).
  return c.op("multiply", {c.op("tanh", {c.op("multiply", {x, c.scalar(t, a.beta)})}), c.scalar(t, a.alpha)});
}

// The node's activations, as many per direction as `defaults` holds, with their alphas
// and betas consumed in order by the functions that take them.
std::vector<Activation> activations(Importer& c, const std::vector<std::string>& defaults, int dirs) {
  std::vector<std::string> names;
  for (const auto& a : c.node().attribute())
    if (a.name() == "activations")
      for (const auto& s : a.strings()) names.push_back(canonical_activation(s));
  size_t per_dir = defaults.size();
  if (names.empty())
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per_dir * static_cast<size_t>(dirs))
    fail(fmt::format("attribute 'activations' lists {} functions; {} direction{} need {}", names.size(), dirs,
                     dirs > 1 ? "s" : "", per_dir * dirs));
  std::vector<float> alphas, betas;
  for (const auto& a : c.node().attribute()) {
    if (a.name() == "activation_alpha") alphas.assign(a.floats().begin(), a.floats().end());
    if (a.name() == "activation_beta") betas.assign(a.floats().begin(), a.floats().end());
  }
  size_t ai = 0, bi = 0;
  std::vector<Activation> r;
  for (const auto& n : names) {
    auto info = activation_info(n);
    if (!info) fail(fmt::format("attribute 'activations': function '{}' is not supported", n));
    Activation a{n, info->alpha, info->beta};
    if (info->alphas && ai < alphas.size()) a.alpha = alphas[ai++];
    if (info->betas && bi < betas.size()) a.beta = betas[bi++];
    r.push_back(a);
  }
  return r;
}

// Everything the unrolled cells share: the node's shapes and attributes.
struct Layer {
  Cell cell;
  int gates;        // 1 (RNN), 3 (GRU: z r h), 4 (LSTM: i o f c)
  int64_t T, B, I, H;
  int dirs;
  bool reverse_only;
  bool layout1;
  std::optional<double> clip;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
  std::vector<Activation> acts;      // per direction: RNN f; GRU f g; LSTM f g h
  DataType t;
};

// Slice [begin, end) of `axis` of x.
NodeId slice(Importer& c, NodeId x, int axis, int64_t begin, int64_t end) {
  std::vector<int64_t> s = c.type(x).shape;
  if (begin == 0 && end == s[axis]) return x;
  std::vector<int64_t> b(s.size(), 0), e = s, st(s.size(), 1);
  b[axis] = begin;
  e[axis] = end;
  return c.op("strided_slice", {x}, {{"begin", b}, {"end", e}, {"steps", st}});
}

// Direction d of a [dirs, ...] tensor, without its leading axis.
NodeId direction_of(Importer& c, NodeId x, int d) {
  std::vector<int64_t> s = c.type(x).shape;
  s.erase(s.begin());
  return c.reshape(slice(c, x, 0, d, d + 1), s);
}

NodeId transpose(Importer& c, NodeId x, std::vector<int64_t> perm) {
  return c.op("transpose", {x}, {{"perm", std::move(perm)}});
}

NodeId concat(Importer& c, const std::vector<NodeId>& xs, int axis) {
  return xs.size() == 1 ? xs[0] : c.op("concatenate", xs, {{"axis", int64_t{axis}}});
}

NodeId zeros(Importer& c, DataType t, std::vector<int64_t> shape) {
  auto b = std::make_shared<interp::HostBuffer>(t, std::move(shape));
  b->fill(0);
  return c.constant(b, "_zeros");
}

// Checks that input k (when given) has shape `want`.
void expect_shape(Importer& c, int k, const char* what, const std::vector<int64_t>& want) {
  if (!c.has_input(k)) return;
  if (c.in_type(k).shape != want)
    fail(fmt::format("input {} ({}) has shape {}, expected [{}]", k, what, c.in_type(k).to_string(), fmt::join(want, ", ")));
}

// The state of input k ([dirs, B, H], or [B, dirs, H] with layout 1) of direction d, or 0.
NodeId initial_state(Importer& c, const Layer& l, int k, int d) {
  if (!c.has_input(k)) return zeros(c, l.t, {l.B, l.H});
  NodeId s = c.in(k);
  if (l.layout1) s = transpose(c, s, {1, 0, 2});
  return direction_of(c, s, d);
}

// The per-step masks [B, 1] of sequence_lens (1 while t < the batch's length), or none
// when every length is the whole sequence. Lengths known at compile time give constant
// masks; lengths given at run time are compared with t in the graph.
std::vector<std::optional<NodeId>> step_masks(Importer& c, const Layer& l) {
  std::vector<std::optional<NodeId>> masks(static_cast<size_t>(l.T));
  if (!c.has_input(4)) return masks;
  expect_shape(c, 4, "sequence_lens", {l.B});
  if (!c.in_type(4).dtype.is_integer()) fail("input 4 (sequence_lens) must be integers");
  std::optional<std::vector<int64_t>> lens;
  try {
    lens = c.const_ints(4);
  } catch (const CompileError&) {
    lens.reset();  // computed at run time: masks from comparisons below
  }
  if (lens) {
    for (int64_t n : *lens)
      if (n < 0 || n > l.T) fail(fmt::format("sequence_lens holds {}, outside [0, {}]", n, l.T));
    if (std::all_of(lens->begin(), lens->end(), [&](int64_t n) { return n == l.T; })) return masks;
    for (int64_t t = 0; t < l.T; ++t) {
      auto m = std::make_shared<interp::HostBuffer>(l.t, std::vector<int64_t>{l.B, 1});
      for (int64_t b = 0; b < l.B; ++b) m->set(b, t < (*lens)[b] ? 1.0 : 0.0);
      masks[t] = c.constant(m, "_mask");
    }
    return masks;
  }
  NodeId len = c.reshape(c.in(4), {l.B, 1});
  DataType it = c.in_type(4).dtype;
  for (int64_t t = 0; t < l.T; ++t)
    masks[t] = c.op("cast", {c.op("less", {c.scalar(it, static_cast<double>(t)), len})}, {{"dtype", dtype_name(l.t)}});
  return masks;
}

// m ? now : before, elementwise with a [B, 1] mask of 0s and 1s.
NodeId masked(Importer& c, const std::optional<NodeId>& m, NodeId now, NodeId before) {
  if (!m) return now;
  return c.op("add", {before, c.op("multiply", {*m, c.op("subtract", {now, before})})});
}

NodeId clipped(Importer& c, const Layer& l, NodeId x) {
  if (!l.clip) return x;
  return c.op("clip", {x}, {{"min", -*l.clip}, {"max", *l.clip}});
}

NodeId one_minus(Importer& c, NodeId x) { return c.op("subtract", {c.scalar(c.type(x).dtype, 1.0), x}); }

struct DirectionResult {
  std::vector<NodeId> y;  // per time step, [B, H] (0 past a batch's length)
  NodeId h, cell_state;   // the final states, [B, H]
};

// One direction of the layer over every time step.
DirectionResult run_direction(Importer& c, const Layer& l, NodeId x, int d, bool reverse,
                              const std::vector<std::optional<NodeId>>& masks) {
  const int64_t G = l.gates, H = l.H;
  const Activation* act = &l.acts[static_cast<size_t>(d) * (l.acts.size() / static_cast<size_t>(l.dirs))];
  NodeId w = direction_of(c, c.in(1), d);  // [G*H, I]
  NodeId r = direction_of(c, c.in(2), d);  // [G*H, H]
  // Every step's input projection at once: [T*B, G*H], with W's bias (and R's where it
  // is not applied inside the GRU's reset).
  NodeId xw = c.op("dense", {c.reshape(x, {l.T * l.B, l.I}), w});
  std::optional<NodeId> rb_h;  // the GRU's R bias of its h gate, with linear_before_reset
  if (c.has_input(3)) {
    NodeId bias = direction_of(c, c.in(3), d);  // [2*G*H]
    NodeId wb = slice(c, bias, 0, 0, G * H), rb = slice(c, bias, 0, G * H, 2 * G * H);
    if (l.cell == Cell::Gru) {
      // R's h bias is added after the reset gate with linear_before_reset, before it
      // (inside the recurrent product) otherwise: keep it apart in both cases.
      rb_h = slice(c, rb, 0, 2 * H, 3 * H);
      NodeId rb_zr = slice(c, rb, 0, 0, 2 * H);
      xw = c.op("add", {xw, c.op("add", {wb, concat(c, {rb_zr, zeros(c, l.t, {H})}, 0)})});
    } else {
      xw = c.op("add", {xw, c.op("add", {wb, rb})});
    }
  }
  std::optional<NodeId> p_i, p_o, p_f;
  if (l.cell == Cell::Lstm && c.has_input(7)) {
    NodeId p = direction_of(c, c.in(7), d);  // [3*H]: i o f
    p_i = slice(c, p, 0, 0, H);
    p_o = slice(c, p, 0, H, 2 * H);
    p_f = slice(c, p, 0, 2 * H, 3 * H);
  }
  NodeId h = initial_state(c, l, 5, d);
  NodeId cs = l.cell == Cell::Lstm ? initial_state(c, l, 6, d) : h;
  DirectionResult res;
  res.y.resize(static_cast<size_t>(l.T));
  for (int64_t s = 0; s < l.T; ++s) {
    int64_t t = reverse ? l.T - 1 - s : s;
    NodeId xt = slice(c, xw, 0, t * l.B, (t + 1) * l.B);  // [B, G*H]
    auto gate = [&](NodeId all, int k) { return slice(c, all, 1, k * H, (k + 1) * H); };
    NodeId h_new, c_new = cs;
    if (l.cell == Cell::Rnn) {
      h_new = activate(c, act[0], clipped(c, l, c.op("add", {xt, c.op("dense", {h, r})})));
    } else if (l.cell == Cell::Gru) {
      NodeId hr = c.op("dense", {h, slice(c, r, 0, 0, 2 * H)});  // [B, 2H]: z r
      NodeId z = activate(c, act[0], clipped(c, l, c.op("add", {gate(xt, 0), gate(hr, 0)})));
      NodeId rg = activate(c, act[0], clipped(c, l, c.op("add", {gate(xt, 1), gate(hr, 1)})));
      NodeId rh = slice(c, r, 0, 2 * H, 3 * H);
      NodeId rec;
      if (l.linear_before_reset) {
        rec = c.op("dense", {h, rh});
        if (rb_h) rec = c.op("add", {rec, *rb_h});
        rec = c.op("multiply", {rg, rec});
      } else {
        rec = c.op("dense", {c.op("multiply", {rg, h}), rh});
        if (rb_h) rec = c.op("add", {rec, *rb_h});
      }
      NodeId hh = activate(c, act[1], clipped(c, l, c.op("add", {gate(xt, 2), rec})));
      // (1 - z) * hh + z * h = hh + z * (h - hh)
      h_new = c.op("add", {hh, c.op("multiply", {z, c.op("subtract", {h, hh})})});
    } else {
      NodeId all = c.op("add", {xt, c.op("dense", {h, r})});  // [B, 4H]: i o f c
      auto peep = [&](NodeId g, const std::optional<NodeId>& p, NodeId state) {
        return p ? c.op("add", {g, c.op("multiply", {*p, state})}) : g;
      };
      NodeId i = activate(c, act[0], clipped(c, l, peep(gate(all, 0), p_i, cs)));
      NodeId f = l.input_forget ? one_minus(c, i) : activate(c, act[0], clipped(c, l, peep(gate(all, 2), p_f, cs)));
      NodeId g = activate(c, act[1], clipped(c, l, gate(all, 3)));
      c_new = c.op("add", {c.op("multiply", {f, cs}), c.op("multiply", {i, g})});
      NodeId o = activate(c, act[0], clipped(c, l, peep(gate(all, 1), p_o, c_new)));
      h_new = c.op("multiply", {o, activate(c, act[2], c_new)});
    }
    const auto& m = masks[static_cast<size_t>(t)];
    res.y[static_cast<size_t>(t)] = m ? c.op("multiply", {h_new, *m}) : h_new;
    h = masked(c, m, h_new, h);
    if (l.cell == Cell::Lstm) cs = masked(c, m, c_new, cs);
  }
  res.h = h;
  res.cell_state = cs;
  return res;
}

bool output_used(Importer& c, int k) { return k < c.node().output_size() && !c.node().output(k).empty(); }

std::vector<NodeId> recurrent(Importer& c, Cell cell) {
  Layer l;
  l.cell = cell;
  l.gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  const TensorType xt = c.in_type(0);
  if (xt.ndim() != 3) fail(fmt::format("input 0 (X) must be 3-d, got {}", xt.to_string()));
  if (!xt.dtype.is_float()) fail(fmt::format("input 0 (X) must be floating point, got {}", xt.to_string()));
  l.t = xt.dtype;
  l.layout1 = c.attr_int("layout", 0) != 0;
  if (c.attr_int("layout", 0) > 1) fail(fmt::format("attribute 'layout' is {}, expected 0 or 1", c.attr_int("layout", 0)));
  l.T = l.layout1 ? xt.shape[1] : xt.shape[0];
  l.B = l.layout1 ? xt.shape[0] : xt.shape[1];
  l.I = xt.shape[2];
  std::string dir = c.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    fail(fmt::format("attribute 'direction' is '{}', expected forward, reverse or bidirectional", dir));
  l.dirs = dir == "bidirectional" ? 2 : 1;
  l.reverse_only = dir == "reverse";
  const TensorType rt = c.in_type(2);
  if (rt.ndim() != 3) fail(fmt::format("input 2 (R) must be 3-d, got {}", rt.to_string()));
  l.H = c.attr_int("hidden_size", rt.shape[2]);
  if (l.H <= 0) fail(fmt::format("attribute 'hidden_size' is {}", l.H));
  const int64_t GH = l.gates * l.H;
  expect_shape(c, 1, "W", {l.dirs, GH, l.I});
  expect_shape(c, 2, "R", {l.dirs, GH, l.H});
  expect_shape(c, 3, "B", {l.dirs, 2 * GH});
  std::vector<int64_t> state = l.layout1 ? std::vector<int64_t>{l.B, l.dirs, l.H} : std::vector<int64_t>{l.dirs, l.B, l.H};
  expect_shape(c, 5, "initial_h", state);
  if (cell == Cell::Lstm) {
    expect_shape(c, 6, "initial_c", state);
    expect_shape(c, 7, "P", {l.dirs, 3 * l.H});
  }
  for (int k = 1; k < c.num_inputs(); ++k)
    if (c.has_input(k) && c.in_type(k).dtype != l.t && k != 4)
      fail(fmt::format("input {} is {}, X is {}", k, dtype_name(c.in_type(k).dtype), dtype_name(l.t)));
  if (c.has_attr("clip")) {
    double clip = c.attr_float("clip", 0);
    if (!(clip > 0)) fail(fmt::format("attribute 'clip' is {}; it must be positive", clip));
    l.clip = clip;
  }
  if (cell == Cell::Gru) l.linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
  if (cell == Cell::Lstm) l.input_forget = c.attr_int("input_forget", 0) != 0;
  std::vector<std::string> defaults = cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  l.acts = activations(c, defaults, l.dirs);
  int max_outputs = cell == Cell::Lstm ? 3 : 2;
  if (c.node().output_size() > max_outputs)
    fail(fmt::format("{} outputs; {} has at most {}", c.node().output_size(), c.node().op_type(), max_outputs));

  NodeId x = l.layout1 ? transpose(c, c.in(0), {1, 0, 2}) : c.in(0);  // [T, B, I]
  auto masks = step_masks(c, l);
  std::vector<DirectionResult> per_dir;
  for (int d = 0; d < l.dirs; ++d) per_dir.push_back(run_direction(c, l, x, d, l.reverse_only || d == 1, masks));

  // Y: [T, dirs, B, H] (layout 1: [B, T, dirs, H]); Y_h, Y_c: [dirs, B, H] ([B, dirs, H]).
  auto states = [&](NodeId DirectionResult::*which) {
    std::vector<NodeId> parts;
    for (const auto& r : per_dir) parts.push_back(c.reshape(r.*which, {1, l.B, l.H}));
    NodeId s = concat(c, parts, 0);
    return l.layout1 ? transpose(c, s, {1, 0, 2}) : s;
  };
  NodeId y_h = states(&DirectionResult::h);
  std::vector<NodeId> outs(static_cast<size_t>(max_outputs), y_h);
  outs[1] = y_h;
  if (output_used(c, 0)) {
    std::vector<NodeId> steps;
    for (int64_t t = 0; t < l.T; ++t) {
      std::vector<NodeId> dirs;
      for (const auto& r : per_dir) dirs.push_back(c.reshape(r.y[static_cast<size_t>(t)], {1, 1, l.B, l.H}));
      steps.push_back(concat(c, dirs, 1));
    }
    NodeId y = concat(c, steps, 0);
    outs[0] = l.layout1 ? transpose(c, y, {2, 0, 1, 3}) : y;
  }
  if (cell == Cell::Lstm && output_used(c, 2)) outs[2] = states(&DirectionResult::cell_state);
  return outs;
}

}  // namespace

void add_rnn_converters(std::map<std::string, Converter>& m) {
  m["RNN"] = [](Importer& c) { return recurrent(c, Cell::Rnn); };
  m["GRU"] = [](Importer& c) { return recurrent(c, Cell::Gru); };
  m["LSTM"] = [](Importer& c) { return recurrent(c, Cell::Lstm); };
}

}  // namespace kiln::frontend
