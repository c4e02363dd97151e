#include "compiler/support/parse.h"
#include "tuner/workload.h"

#include "compiler/graph/passes/passes.h"
#include "compiler/graph/winograd.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace kiln::tuner {

namespace {

struct OpParams {
  std::vector<std::string> required;
  std::vector<std::string> optional;
};

const std::map<std::string, OpParams>& op_params() {
  static const std::map<std::string, OpParams> m = {
      {"matmul", {{"M", "N", "K"}, {}}},
      {"dense", {{"M", "N", "K"}, {}}},
      {"matmul_packed", {{"M", "N", "K"}, {"block"}}},
      {"conv2d", {{"C", "H", "W", "O", "KH"}, {"N", "KW", "stride", "pad", "block", "in_block", "groups"}}},
      // A GPU's convolution, on the model's own NCHW layout (any groups).
      {"conv2d_nchw", {{"C", "H", "W", "O", "KH"}, {"N", "KW", "stride", "pad", "groups"}}},
      // A CPU's 3x3 stride-1 convolution in Winograd's tiles (graph::winograd), on NCHWc
      // data, its weight transformed.
      {"conv2d_winograd", {{"C", "H", "W", "O"}, {"N", "pad", "tile", "block", "in_block"}}},
  };
  return m;
}

std::vector<std::string> key_order(const std::string& op) {
  if (op == "conv2d") return {"N", "C", "H", "W", "O", "KH", "KW", "stride", "pad", "block"};
  if (op == "conv2d_nchw") return {"N", "C", "H", "W", "O", "KH", "KW", "stride", "pad", "groups"};
  if (op == "matmul_packed") return {"M", "N", "K", "block"};
  if (op == "conv2d_winograd") return {"N", "C", "H", "W", "O", "pad", "tile", "block", "in_block"};
  return {"M", "N", "K"};
}

// The CPU layout's channel block of a conv2d workload: what --op assumes when it is not
// given, and what an accelerator's workload (which has no CPU layout) is keyed with.
int64_t default_block(int64_t out_channels) { return std::max<int64_t>(8, graph::conv_channel_block(out_channels, false)); }

}  // namespace

bool Workload::in_op_library() const { return op_params().count(op) != 0; }

Workload Workload::from_key(const std::string& key) {
  auto colon = key.find(':');
  std::string op = key.substr(0, colon);
  if (op_params().count(op)) return parse_workload(key);
  Workload w{op, {}};
  if (colon != std::string::npos) w.args = key.substr(colon + 1);
  return w;
}

int64_t Workload::at(const std::string& key) const {
  auto it = params.find(key);
  if (it == params.end()) throw Error("workload " + op + " has no parameter " + key);
  return it->second;
}

std::string Workload::key() const {
  if (!in_op_library()) return op + ":" + args;
  std::vector<std::string> parts;
  for (const auto& k : key_order(op)) parts.push_back(fmt::format("{}={}", k, at(k)));
  // NCHWc data (CarryLayout): its channel block; NCHW data's key has none.
  if (op == "conv2d" && params.count("in_block") && at("in_block") > 0) parts.push_back(fmt::format("in_block={}", at("in_block")));
  // Grouped: its groups; one group's key has none.
  if (op == "conv2d" && params.count("groups") && at("groups") > 1) parts.push_back(fmt::format("groups={}", at("groups")));
  return op + ":" + fmt::format("{}", fmt::join(parts, ","));
}

double Workload::flops() const {
  if (!in_op_library()) return arg_flops;
  if (op == "conv2d_winograd") {  // the direct convolution's, so the rates compare with conv2d's
    int64_t oh = at("H") + 2 * at("pad") - 2, ow = at("W") + 2 * at("pad") - 2;
    return 2.0 * at("N") * at("O") * oh * ow * at("C") * 9;
  }
  if (op == "conv2d" || op == "conv2d_nchw") {
    int64_t oh = (at("H") + 2 * at("pad") - at("KH")) / at("stride") + 1;
    int64_t ow = (at("W") + 2 * at("pad") - at("KW")) / at("stride") + 1;
    int64_t groups = params.count("groups") ? at("groups") : 1;
    return 2.0 * at("N") * at("O") * oh * ow * at("C") / groups * at("KH") * at("KW");
  }
  return 2.0 * at("M") * at("N") * at("K");
}

Workload parse_workload(const std::string& spec) {
  auto colon = spec.find(':');
  std::string op = spec.substr(0, colon);
  auto it = op_params().find(op);
  if (it == op_params().end())
    throw Error(fmt::format("--op '{}': unknown operator '{}' (matmul, dense, matmul_packed, conv2d, conv2d_nchw or conv2d_winograd)", spec, op));
  if (colon == std::string::npos) throw Error(fmt::format("--op '{}': give the shape after ':', e.g. matmul:M=64,N=64,K=64", spec));
  Workload w{op, {}};
  std::stringstream ss(spec.substr(colon + 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("--op '{}': '{}' is not KEY=VALUE", spec, item));
    std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    const OpParams& p = it->second;
    bool known = std::find(p.required.begin(), p.required.end(), k) != p.required.end() ||
                 std::find(p.optional.begin(), p.optional.end(), k) != p.optional.end();
    if (!known)
      throw Error(fmt::format("--op '{}': {} has no parameter '{}' (it takes {}{}{})", spec, op, k,
                                              fmt::join(p.required, ","), p.optional.empty() ? "" : ",",
                                              fmt::join(p.optional, ",")));
    std::optional<int64_t> parsed = parse_int(v);
    int64_t value = parsed.value_or(-1);
    if (value < (k == "pad" ? 0 : 1))
      throw Error(fmt::format("--op '{}': {}={} is not a {} integer", spec, k, v, k == "pad" ? "non-negative" : "positive"));
    if (w.params.count(k)) throw Error(fmt::format("--op '{}': {} given twice", spec, k));
    w.params[k] = value;
  }
  for (const auto& k : it->second.required)
    if (!w.params.count(k)) throw Error(fmt::format("--op '{}': {} needs {}", spec, op, k));
  if (op == "matmul_packed") {
    // The panel width AlterLayout picks with AVX-512 when it is not given.
    int64_t n = w.params["N"];
    w.params.try_emplace("block", graph::register_tile_columns(n, target::MachineTraits{512, 32}));
    if (w.params["block"] < 1 || n % w.params["block"])
      throw Error(fmt::format("--op '{}': N={} has no panel width; give block= (a divisor of N)", spec, n));
  }
  if (op == "conv2d_nchw") {
    w.params.try_emplace("N", 1);
    w.params.try_emplace("KW", w.params["KH"]);
    w.params.try_emplace("stride", 1);
    w.params.try_emplace("pad", 0);
    w.params.try_emplace("groups", 1);
    int64_t g = w.params["groups"];
    if (w.params["C"] % g || w.params["O"] % g)
      throw Error(fmt::format("--op '{}': groups={} does not divide C={} and O={}", spec, g, w.params["C"], w.params["O"]));
    if (w.params["H"] + 2 * w.params["pad"] < w.params["KH"] || w.params["W"] + 2 * w.params["pad"] < w.params["KW"])
      throw Error(fmt::format("--op '{}': the kernel is larger than the padded input", spec));
  }
  if (op == "conv2d_winograd") {
    w.params.try_emplace("N", 1);
    w.params.try_emplace("pad", 1);
    int64_t oh = w.params["H"] + 2 * w.params["pad"] - 2, ow = w.params["W"] + 2 * w.params["pad"] - 2;
    if (oh < 1 || ow < 1) throw Error(fmt::format("--op '{}': the 3x3 kernel is larger than the padded input", spec));
    w.params.try_emplace("tile", graph::winograd::default_tile(oh, ow));  // the winograd_conv pass's choice
    w.params.try_emplace("block", default_block(w.params["O"]));
    w.params.try_emplace("in_block", default_block(w.params["C"]));
    if (w.params["tile"] != 2 && w.params["tile"] != 4) throw Error(fmt::format("--op '{}': tile={} (Winograd's tiles are 2 or 4)", spec, w.params["tile"]));
    if (w.params["O"] % w.params["block"])
      throw Error(fmt::format("--op '{}': O={} is not a multiple of block={}", spec, w.params["O"], w.params["block"]));
    if (w.params["C"] % w.params["in_block"])
      throw Error(fmt::format("--op '{}': C={} is not a multiple of in_block={}", spec, w.params["C"], w.params["in_block"]));
  }
  if (op == "conv2d") {
    w.params.try_emplace("N", 1);
    w.params.try_emplace("KW", w.params["KH"]);
    w.params.try_emplace("stride", 1);
    w.params.try_emplace("pad", 0);
    int64_t o = w.params["O"], g = w.params.try_emplace("groups", 1).first->second;
    if (w.params["C"] % g || o % g)
      throw Error(fmt::format("--op '{}': groups={} does not divide C={} and O={}", spec, g, w.params["C"], o));
    w.params.try_emplace("block", g > 1 ? graph::conv_channel_block(o / g, true) : default_block(o));
    if (w.params["block"] < 1)
      throw Error(fmt::format("--op '{}': a group's {} output channels have no channel block (a multiple of 4 has)", spec, o / g));
    if ((o / g) % w.params["block"])
      throw Error(fmt::format("--op '{}': {}={} is not a multiple of block={}", spec, g > 1 ? "a group's O" : "O", o / g, w.params["block"]));
    auto ib = w.params.find("in_block");
    if (ib != w.params.end() && (ib->second < 0 || (ib->second > 0 && w.params["C"] % ib->second)))
      throw Error(fmt::format("--op '{}': C={} is not a multiple of in_block={}", spec, w.params["C"], ib->second));
    if (w.params["H"] + 2 * w.params["pad"] < w.params["KH"] || w.params["W"] + 2 * w.params["pad"] < w.params["KW"])
      throw Error(fmt::format("--op '{}': the kernel is larger than the padded input", spec));
  }
  return w;
}

std::optional<Workload> workload_of(const graph::Graph& g, graph::NodeId node) {
  const graph::Node& n = g.node(node);
  if (n.op == "conv2d_packed") {
    // An accelerator's int8 convolution, data [N/b, C/bi, H, W, b, bi] and kernel
    // [O/bo, C/bi, KH, KW, bo, bi] (compiler/graph/ops_packed.cc).
    const auto& x = g.type(n.inputs[0]).shape;
    const auto& w = g.type(n.inputs[1]).shape;
    auto s = n.attrs.get_ints("strides", {1, 1});
    auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    if (x.size() != 6 || w.size() != 6 || s.size() != 2 || s[0] != s[1] || p.size() != 4 || p[0] != p[1] || p[0] != p[2] ||
        p[0] != p[3])
      return std::nullopt;
    int64_t o = w[0] * w[4];
    return Workload{"conv2d",
                    {{"N", x[0] * x[4]}, {"C", x[1] * x[5]}, {"H", x[2]}, {"W", x[3]}, {"O", o}, {"KH", w[2]}, {"KW", w[3]},
                     {"stride", s[0]}, {"pad", p[0]}, {"block", default_block(o)}}};
  }
  if (n.type.dtype != ir::DataType::Float(32)) return std::nullopt;
  if (n.op == "matmul" || n.op == "dense") {
    const auto& a = g.type(n.inputs[0]).shape;
    const auto& b = g.type(n.inputs[1]).shape;
    if (a.size() != 2 || b.size() != 2) return std::nullopt;
    int64_t n_ = n.op == "matmul" ? b[1] : b[0];
    return Workload{n.op, {{"M", a[0]}, {"N", n_}, {"K", a[1]}}};
  }
  if (n.op == "matmul_packed") {
    const auto& a = g.type(n.inputs[0]).shape;
    const auto& w = g.type(n.inputs[1]).shape;  // [N/b, K, b]
    return Workload{n.op, {{"M", a[0]}, {"N", w[0] * w[2]}, {"K", a[1]}, {"block", w[2]}}};
  }
  if (n.op == "conv2d") {  // a GPU's (the CPU's are conv2d_nchwc by then)
    const auto& x = g.type(n.inputs[0]).shape;
    const auto& w = g.type(n.inputs[1]).shape;
    auto s = n.attrs.get_ints("strides", {1, 1});
    auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    auto d = n.attrs.get_ints("dilations", {1, 1});
    if (x.size() != 4 || s.size() != 2 || s[0] != s[1] || p.size() != 4 || p[0] != p[1] || p[0] != p[2] || p[0] != p[3] ||
        d != std::vector<int64_t>{1, 1})
      return std::nullopt;
    return Workload{"conv2d_nchw",
                    {{"N", x[0]}, {"C", x[1]}, {"H", x[2]}, {"W", x[3]}, {"O", w[0]}, {"KH", w[2]}, {"KW", w[3]},
                     {"stride", s[0]}, {"pad", p[0]}, {"groups", n.attrs.get_int("groups", 1)}}};
  }
  if (n.op == "conv2d_winograd") {
    const auto& x = g.type(n.inputs[0]).shape;  // [N, C/c, H, W, c]
    const auto& w = g.type(n.inputs[1]).shape;  // [alpha^2, C, O]
    auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    if (x.size() != 5 || w.size() != 3 || p.size() != 4 || p[0] != p[1] || p[0] != p[2] || p[0] != p[3]) return std::nullopt;
    return Workload{"conv2d_winograd",
                    {{"N", x[0]}, {"C", x[1] * x[4]}, {"H", x[2]}, {"W", x[3]}, {"O", w[2]}, {"pad", p[0]},
                     {"tile", n.attrs.get_int("tile", 2)}, {"block", n.attrs.get_int("block", 0)}, {"in_block", x[4]}}};
  }
  if (n.op == "conv2d_nchwc" && !n.attrs.get_int("depthwise", 0)) {
    const auto& x = g.type(n.inputs[0]).shape;
    const auto& w = g.type(n.inputs[1]).shape;
    auto s = n.attrs.get_ints("strides", {1, 1});
    auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    auto d = n.attrs.get_ints("dilations", {1, 1});
    if (s.size() != 2 || s[0] != s[1] || p.size() != 4 || p[0] != p[1] || p[0] != p[2] || p[0] != p[3] || d != std::vector<int64_t>{1, 1})
      return std::nullopt;
    Workload wl{"conv2d",
                {{"N", x[0]}, {"C", x[1]}, {"H", x[2]}, {"W", x[3]}, {"O", w[0] * w[4]}, {"KH", w[2]}, {"KW", w[3]},
                 {"stride", s[0]}, {"pad", p[0]}, {"block", w[4]}}};
    if (x.size() == 5) {  // NCHWc data [N, C/c, H, W, c]
      wl.params["C"] = x[1] * x[4];
      wl.params["in_block"] = x[4];
    }
    if (int64_t groups = n.attrs.get_int("groups", 1); groups > 1) wl.params["groups"] = groups;
    return wl;
  }
  return std::nullopt;
}

graph::Graph workload_graph(const Workload& w, graph::NodeId* op_node) {
  graph::Graph g;
  using graph::TensorType;
  auto f32 = ir::DataType::Float(32);
  graph::NodeId out;
  if (w.op == "matmul") {
    graph::NodeId a = g.add_input("A", TensorType{f32, {w.at("M"), w.at("K")}});
    graph::NodeId b = g.add_input("B", TensorType{f32, {w.at("K"), w.at("N")}});
    out = g.add_op("matmul", {a, b}, {}, "matmul");
  } else if (w.op == "dense") {
    graph::NodeId x = g.add_input("X", TensorType{f32, {w.at("M"), w.at("K")}});
    graph::NodeId wt = g.add_input("W", TensorType{f32, {w.at("N"), w.at("K")}});
    out = g.add_op("dense", {x, wt}, {}, "dense");
  } else if (w.op == "matmul_packed") {
    int64_t b = w.at("block");
    graph::NodeId x = g.add_input("X", TensorType{f32, {w.at("M"), w.at("K")}});
    graph::NodeId wt = g.add_input("W", TensorType{f32, {w.at("N") / b, w.at("K"), b}});
    out = g.add_op("matmul_packed", {x, wt}, {}, "matmul_packed");
  } else if (w.op == "conv2d") {
    int64_t b = w.at("block");
    int64_t ib = w.params.count("in_block") ? w.at("in_block") : 0;
    std::vector<int64_t> data = {w.at("N"), w.at("C"), w.at("H"), w.at("W")};
    if (ib > 0) data = {w.at("N"), w.at("C") / ib, w.at("H"), w.at("W"), ib};
    graph::NodeId x = g.add_input("data", TensorType{f32, data});
    int64_t groups = w.params.count("groups") ? w.at("groups") : 1;
    graph::NodeId wt = g.add_input("weight", TensorType{f32, {w.at("O") / b, w.at("C") / groups, w.at("KH"), w.at("KW"), b}});
    int64_t s = w.at("stride"), p = w.at("pad");
    // NCHWc out, as CarryLayout hands a model's convolutions on.
    graph::Attrs attrs{{"strides", std::vector<int64_t>{s, s}},
                       {"pads", std::vector<int64_t>{p, p, p, p}},
                       {"dilations", std::vector<int64_t>{1, 1}},
                       {"blocked_out", int64_t{1}}};
    if (groups > 1) attrs.set("groups", groups);
    out = g.add_op("conv2d_nchwc", {x, wt}, attrs, "conv2d");
  } else if (w.op == "conv2d_winograd") {
    int64_t ib = w.at("in_block"), alpha = w.at("tile") + 2, p = w.at("pad");
    graph::NodeId x = g.add_input("data", TensorType{f32, {w.at("N"), w.at("C") / ib, w.at("H"), w.at("W"), ib}});
    graph::NodeId u = g.add_input("weight", TensorType{f32, {alpha * alpha, w.at("C"), w.at("O")}});
    graph::Attrs attrs{{"pads", std::vector<int64_t>{p, p, p, p}}, {"block", w.at("block")}, {"tile", w.at("tile")}};
    out = g.add_op("conv2d_winograd", {x, u}, attrs, "conv2d");
  } else if (w.op == "conv2d_nchw") {
    int64_t groups = w.at("groups");
    graph::NodeId x = g.add_input("data", TensorType{f32, {w.at("N"), w.at("C"), w.at("H"), w.at("W")}});
    graph::NodeId wt = g.add_input("weight", TensorType{f32, {w.at("O"), w.at("C") / groups, w.at("KH"), w.at("KW")}});
    int64_t s = w.at("stride"), p = w.at("pad");
    graph::Attrs attrs{{"strides", std::vector<int64_t>{s, s}}, {"pads", std::vector<int64_t>{p, p, p, p}}, {"groups", groups}};
    out = g.add_op("conv2d", {x, wt}, attrs, "conv2d");
  } else {
    throw Error("no graph for workload op '" + w.op + "'");
  }
  g.add_output(out, "out");
  *op_node = out;
  return g;
}

}  // namespace kiln::tuner
