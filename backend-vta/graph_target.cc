#include "backend-vta/graph_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "backend-vta/codegen.h"
#include "backend-vta/strategy.h"
#include "compiler/graph/quant_pattern.h"
#include "compiler/graph/strategy.h"
#include "compiler/schedule/lower.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "backend-vta/ops.h"
#include "hw/driver/device_settings.h"
#include "hw/driver/runtime/device_buffer.h"
#include "hw/spec/config_files.h"
#include "hw/spec/error.h"
#include "support/integer.h"

namespace kiln::vta {

namespace {

using graph::AddChain;
using graph::Attrs;
using graph::ConvChain;
using graph::Graph;
using graph::Node;
using graph::NodeId;
using graph::Placement;
using graph::is_int8;
using graph::number;
using ir::DataType;

hw::Config config_of(const target::Target& t) { return hw::load_config(t.option("config", "default")); }

// ---------------------------------------------------------------- matching

// ---------------------------------------------------------------- workloads

// The workload with its channels padded to whole blocks.
Conv2DWorkload conv_workload(const Env& env, const Graph& g, const ConvChain& m, const std::string& name) {
  const Node& conv = g.node(m.conv);
  const auto& x = g.type(m.x).shape;
  const auto& w = g.type(m.weight).shape;
  Conv2DWorkload wl;
  wl.name = name;
  wl.batch = static_cast<int>(x[0]);
  wl.in_channels = static_cast<int>(round_up(x[1], env.block_in()));
  wl.out_channels = static_cast<int>(round_up(w[0], env.block_out()));
  if (m.dense) return wl;
  auto s = conv.attrs.get_ints("strides", {1, 1});
  auto p = conv.attrs.get_ints("pads", {0, 0, 0, 0});
  wl.height = static_cast<int>(x[2]);
  wl.width = static_cast<int>(x[3]);
  wl.kernel_h = static_cast<int>(w[2]);
  wl.kernel_w = static_cast<int>(w[3]);
  wl.stride_h = static_cast<int>(s.at(0));
  wl.stride_w = static_cast<int>(s.at(1));
  wl.pad_h = static_cast<int>(p.at(0));
  wl.pad_w = static_cast<int>(p.at(1));
  return wl;
}

// Why the accelerator cannot run this convolution, or "".
std::string conv_problem(const Env& env, const Graph& g, const ConvChain& m, const Conv2DWorkload& wl) {
  const Node& conv = g.node(m.conv);
  auto p = conv.attrs.get_ints("pads", {0, 0, 0, 0});
  if (conv.attrs.get_int("groups", 1) != 1) return "grouped convolutions are not supported on the accelerator";
  for (int64_t d : conv.attrs.get_ints("dilations", {1, 1}))
    if (d != 1) return "dilated convolutions are not supported on the accelerator";
  if (p.size() != 4 || p[0] != p[2] || p[1] != p[3]) return "asymmetric padding is not supported on the accelerator";
  if (m.shift < 0) return fmt::format("requantization shift {} is negative", m.shift);
  try {
    Requant rq{true, static_cast<int>(m.shift), m.relu};
    conv2d_packed(env, wl, rq);
    default_conv2d_knobs(env, wl, rq);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

std::string add_problem(const Env& env, const AddWorkload& wl, const AddChain& m) {
  try {
    add_packed(env, wl, Requant{false, static_cast<int>(m.shift), m.relu},
               AddScales{static_cast<int>(m.shift_a), static_cast<int>(m.shift_b), static_cast<int>(m.round)});
    default_add_knobs(env, wl);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

// The workload with its channels padded to whole blocks.
AddWorkload add_workload(const Env& env, const graph::TensorType& t, const std::string& name) {
  AddWorkload wl;
  wl.name = name;
  wl.batch = static_cast<int>(t.shape[0]);
  wl.channels = static_cast<int>(round_up(t.shape[1], env.block_out()));
  wl.height = static_cast<int>(t.shape[2]);
  wl.width = static_cast<int>(t.shape[3]);
  return wl;
}

// An int8 max_pool2d the accelerator can run, or why not (pool_problem).
struct PoolMatch {
  NodeId x = -1;
  PoolWorkload wl;
};

std::optional<PoolMatch> match_pool(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.op != "max_pool2d" || !is_int8(n.type) || n.type.ndim() != 4) return std::nullopt;
  PoolMatch m;
  m.x = n.inputs[0];
  const auto& x = g.type(m.x).shape;
  auto k = n.attrs.get_ints("kernel", {});
  auto s = n.attrs.get_ints("strides", {1, 1});
  auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || p.size() != 4) return std::nullopt;
  m.wl.name = n.name;
  m.wl.batch = static_cast<int>(x[0]);
  m.wl.channels = static_cast<int>(x[1]);
  m.wl.height = static_cast<int>(x[2]);
  m.wl.width = static_cast<int>(x[3]);
  m.wl.kernel_h = static_cast<int>(k[0]);
  m.wl.kernel_w = static_cast<int>(k[1]);
  m.wl.stride_h = static_cast<int>(s[0]);
  m.wl.stride_w = static_cast<int>(s[1]);
  m.wl.pad_h = static_cast<int>(p[0]);
  m.wl.pad_w = static_cast<int>(p[1]);
  return m;
}

// True when `id` cannot be negative: a ReLU or a clip from 0, seen through casts,
// max pools and a quantize_linear with a non-negative zero point (ResNet's first,
// host, convolution: quantize_linear(relu(conv))).
bool non_negative(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.op == "relu") return true;
  if (n.op == "clip") {
    auto lo = number(n.attrs, "min");
    return lo && *lo >= 0;
  }
  if (n.op == "cast" || n.op == "max_pool2d") return non_negative(g, n.inputs[0]);
  if (n.op == "quantize_linear") {
    if (n.inputs.size() > 2) {
      const Node& zp = g.node(n.inputs[2]);
      if (!zp.is_constant()) return false;
      for (int64_t i = 0; i < zp.type.size(); ++i)
        if (zp.value->get_int(i) < 0) return false;
    }
    return non_negative(g, n.inputs[0]);
  }
  return false;
}

std::string pool_problem(const Env& env, const Graph& g, NodeId id, const PoolMatch& m) {
  const Node& n = g.node(id);
  auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  for (int64_t d : n.attrs.get_ints("dilations", {1, 1}))
    if (d != 1) return "dilated pooling is not supported on the accelerator";
  if (n.attrs.get_int("ceil_mode", 0) != 0) return "ceil_mode pooling is not supported on the accelerator";
  if (p[0] != p[2] || p[1] != p[3]) return "asymmetric padding is not supported on the accelerator";
  if ((p[0] || p[1]) && !non_negative(g, m.x))
    return "max_pool2d pads with -inf, the accelerator's loads with 0: padding needs non-negative (ReLU) input";
  try {
    max_pool2d_packed(env, m.wl);
    default_pool_knobs(env, m.wl);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------- placement

class Placer {
 public:
  Placer(const Graph& old, const target::Target& t, const Env& env, std::vector<Placement>& report)
      : old_(old), rw_(old), t_(t), env_(env), report_(report), uses_(old.use_counts()) {}

  Graph run() {
    std::map<NodeId, ConvChain> convs;
    std::map<NodeId, AddChain> adds;
    std::set<NodeId> interior, reported;
    std::map<NodeId, PoolMatch> pools;
    for (NodeId id = 0; id < old_.size(); ++id) {
      const Node& n = old_.node(id);
      if (auto p = match_pool(old_, id)) {
        std::string why = pool_problem(env_, old_, id, *p);
        // A pool of a host tensor stays on the host: packing its input (larger than its
        // output) and a pass through the GEMM core cost more than pooling there.
        if (why.empty() && !convs.count(p->x) && !adds.count(p->x) && !pools.count(p->x))
          why = "its input comes from the host, where pooling it costs less than packing the larger input for the "
                "accelerator";
        report_.push_back({n.name, n.op, why.empty() ? t_.kind() : "cpu", why});
        if (why.empty()) pools[id] = *p;
      }
      if (n.op != "cast") continue;
      if (auto c = graph::match_conv_chain(old_, uses_, id)) {
        reported.insert(c->conv);
        std::string why = conv_problem(env_, old_, *c, conv_workload(env_, old_, *c, n.name));
        report_.push_back({old_.node(c->conv).name, old_.node(c->conv).op, why.empty() ? t_.kind() : "cpu", why});
        if (why.empty()) {
          convs[id] = *c;
          interior.insert(c->interior.begin(), c->interior.end());
        }
      } else if (auto a = graph::match_add_chain(old_, uses_, id)) {
        std::string why = add_problem(env_, add_workload(env_, old_.type(a->a), n.name), *a);
        report_.push_back({n.name, "add", why.empty() ? t_.kind() : "cpu", why});
        if (why.empty()) {
          adds[id] = *a;
          interior.insert(a->interior.begin(), a->interior.end());
        }
      }
    }
    for (NodeId id = 0; id < old_.size(); ++id) {
      const Node& n = old_.node(id);
      if (n.is_input() || interior.count(id)) continue;
      if (convs.count(id)) place_conv(id, convs[id]);
      else if (adds.count(id)) place_add(id, adds[id]);
      else if (pools.count(id)) place_pool(id, pools[id]);
      else {
        if (is_candidate(n) && !reported.count(id)) report_unplaced(id);
        rw_.copy(id);
      }
    }
    return rw_.finish();
  }

 private:
  // Operators of the kinds the accelerator runs, in whatever form.
  static bool is_candidate(const Node& n) {
    return n.op == "conv2d" || n.op == "conv2d_nchwc" || n.op == "dense" || n.op == "matmul";
  }

  // A candidate the accelerator does not take, with the reason.
  void report_unplaced(NodeId id) {
    const Node& n = old_.node(id);
    std::string why = n.type.dtype.is_float() ? fmt::format("{} {}: not quantized", n.type.dtype.to_string(), n.op)
                                              : "not in the accelerator's requantized int8 form";
    report_.push_back({n.name, n.op, "cpu", why});
  }

  // `x` with dimension `axis` padded with zeros to `size`, or `x`.
  NodeId pad_to(NodeId x, int axis, int64_t size, const std::string& name) {
    const std::vector<int64_t> shape = rw_.graph().type(x).shape;
    if (shape[axis] == size) return x;
    std::vector<int64_t> pads(2 * shape.size(), 0);
    pads[shape.size() + axis] = size - shape[axis];
    return rw_.graph().add_op("pad", {x}, {{"pads", pads}, {"value", 0.0}}, name);
  }

  NodeId reshape(NodeId x, std::vector<int64_t> shape, const std::string& name) {
    return rw_.graph().add_op("reshape", {x}, {{"shape", shape}}, name);
  }

  // The packed form of an NCHW int8 tensor with its channels padded with zeros to
  // `channels` (whole blocks): the producer's own when the accelerator made it (a
  // padded producer's padding channels hold zeros), else packed at the boundary.
  NodeId packed(NodeId old_id, int64_t channels) {
    NodeId id = rw_.map(old_id);
    auto it = packed_of_.find(id);
    if (it != packed_of_.end()) {
      const auto& ps = rw_.graph().type(it->second).shape;
      if (ps[1] * ps[5] == channels) return it->second;
    }
    NodeId p = rw_.graph().add_op("layout_pack", {pad_to(id, 1, channels, old_.node(old_id).name + ".padded")},
                                  {{"batch_block", int64_t{env_.batch()}}, {"channel_block", int64_t{env_.block_in()}}},
                                  old_.node(old_id).name + ".packed");
    packed_of_[id] = p;
    return p;
  }

  // The host's view of a packed output with `channels` real channels: unpacked, the
  // padding sliced off; the packed form stays what accelerator consumers read.
  NodeId unpacked(NodeId packed_out, int64_t channels, const std::string& name) {
    Graph& g = rw_.graph();
    NodeId y = g.add_op("layout_unpack", {packed_out}, {}, name + ".padded");
    const std::vector<int64_t> ys = g.type(y).shape;
    y = g.add_op("strided_slice", {y},
                 {{"begin", std::vector<int64_t>{0, 0, 0, 0}},
                  {"end", std::vector<int64_t>{ys[0], channels, ys[2], ys[3]}},
                  {"steps", std::vector<int64_t>{1, 1, 1, 1}}},
                 name);
    packed_of_[y] = packed_out;
    return y;
  }

  // The node the accelerator wrote, unpacked to NCHW for the host (dead code when no
  // host node reads it).
  void finish(NodeId old_id, NodeId packed_out) {
    NodeId out = rw_.graph().add_op("layout_unpack", {packed_out}, {}, old_.node(old_id).name);
    packed_of_[out] = packed_out;
    rw_.set(old_id, out);
  }

  // Channels are padded with zeros to whole blocks (zero weights, zero biases) and
  // the padding sliced off the output; a dense layer is the 1x1 convolution of a 1x1
  // image, reshaped on the way in and out.
  void place_conv(NodeId id, const ConvChain& m) {
    Graph& g = rw_.graph();
    const Node& conv = old_.node(m.conv);
    Conv2DWorkload wl = conv_workload(env_, old_, m, conv.name);
    const auto& xs = old_.type(m.x).shape;
    int64_t out_channels = old_.type(m.weight).shape[0];
    NodeId x = rw_.map(m.x), w = rw_.map(m.weight), bias = rw_.map(m.bias);
    if (m.dense) {
      x = reshape(x, {xs[0], xs[1], 1, 1}, conv.name + ".image");
      w = reshape(w, {out_channels, xs[1], 1, 1}, conv.name + ".weight_1x1");
      bias = reshape(bias, {1, out_channels, 1, 1}, conv.name + ".bias_1x1");
    }
    NodeId xp;
    if (!m.dense) {
      xp = packed(m.x, wl.in_channels);
    } else {
      NodeId padded = pad_to(x, 1, wl.in_channels, conv.name + ".data_padded");
      xp = g.add_op("layout_pack", {padded},
                    {{"batch_block", int64_t{env_.batch()}}, {"channel_block", int64_t{env_.block_in()}}},
                    conv.name + ".data_packed");
    }
    w = pad_to(pad_to(w, 0, wl.out_channels, conv.name + ".weight_padded"), 1, wl.in_channels, conv.name + ".weight_padded");
    bias = pad_to(bias, 1, wl.out_channels, conv.name + ".bias_padded");
    NodeId wp = g.add_op("layout_pack_weight", {w},
                         {{"out_block", int64_t{env_.block_out()}}, {"in_block", int64_t{env_.block_in()}}},
                         conv.name + ".weight_packed");
    NodeId bp = g.add_op("layout_pack_bias", {bias},
                         {{"batch_block", int64_t{env_.batch()}}, {"out_block", int64_t{env_.block_out()}}},
                         conv.name + ".bias_packed");
    Attrs a{{"strides", conv.attrs.get_ints("strides", {1, 1})},
            {"pads", conv.attrs.get_ints("pads", {0, 0, 0, 0})},
            {"shift", m.shift},
            {"relu", int64_t{m.relu}},
            {"target", t_.kind()}};
    if (m.dense) a.set("strides", std::vector<int64_t>{1, 1}), a.set("pads", std::vector<int64_t>{0, 0, 0, 0});
    NodeId out = g.add_op("conv2d_packed", {xp, wp, bp}, a, conv.name);
    if (wl.out_channels == out_channels && !m.dense) return finish(id, out);
    // The host's view: unpacked, the padding sliced off, a dense layer's shape.
    NodeId y = unpacked(out, out_channels, old_.node(id).name + (m.dense ? ".image" : ""));
    if (m.dense) y = reshape(y, {g.type(y).shape[0], out_channels}, old_.node(id).name);
    rw_.set(id, y);
  }

  // The identity block, one constant for the whole graph.
  NodeId identity() {
    if (identity_ < 0) {
      std::vector<int8_t> eye = identity_block(env_);
      auto buf = std::make_shared<interp::HostBuffer>(DataType::Int(8),
                                                      std::vector<int64_t>{env_.block_out(), env_.block_in()});
      std::memcpy(buf->data(), eye.data(), eye.size());
      identity_ = rw_.graph().add_constant("vta.identity", buf);
    }
    return identity_;
  }

  void place_pool(NodeId id, const PoolMatch& m) {
    const Node& n = old_.node(id);
    Attrs a{{"kernel", n.attrs.get_ints("kernel")},
            {"strides", n.attrs.get_ints("strides", {1, 1})},
            {"pads", n.attrs.get_ints("pads", {0, 0, 0, 0})},
            {"target", t_.kind()}};
    NodeId x = packed(m.x, old_.type(m.x).shape[1]);
    finish(id, rw_.graph().add_op("max_pool2d_packed", {x, identity()}, a, n.name));
  }

  void place_add(NodeId id, const AddChain& m) {
    Graph& g = rw_.graph();
    identity();
    int64_t channels = old_.type(m.a).shape[1];
    int64_t padded = round_up(channels, env_.block_out());
    NodeId a = packed(m.a, padded), b = packed(m.b, padded);
    Attrs at{{"shift_a", m.shift_a}, {"shift_b", m.shift_b}, {"round", m.round},
             {"shift", m.shift},     {"relu", int64_t{m.relu}}, {"target", t_.kind()}};
    NodeId out = g.add_op("add_packed", {a, b, identity_}, at, old_.node(id).name);
    if (padded == channels) return finish(id, out);
    rw_.set(id, unpacked(out, channels, old_.node(id).name));
  }

  const Graph& old_;
  graph::GraphRewriter rw_;
  const target::Target& t_;
  const Env& env_;
  std::vector<Placement>& report_;
  std::vector<int> uses_;
  std::map<NodeId, NodeId> packed_of_;  // new NCHW node -> its packed form
  NodeId identity_ = -1;
};

// ---------------------------------------------------------------- lowering

int dim(const Graph& g, NodeId id, int d) { return static_cast<int>(g.type(id).shape.at(d)); }

// The knobs of a placed convolution: a tuned record's where the hook has one that
// fits this configuration and epilogue (a record is tuned with a shift-and-clip
// epilogue; one whose tiles leave no room for the bias is not used), else the cycle
// model's default.
Conv2DKnobs conv2d_knobs(const Env& env, const Conv2DWorkload& wl, const Requant& rq, const Graph& g, NodeId id,
                         const graph::KnobHook& hook, const std::string& records_key) {
  if (hook)
    if (auto words = hook(g, id, "conv2d.vta", records_key)) {
      Conv2DKnobs k = conv2d_knobs_from_words(*words);
      try {
        check_conv2d_knobs(env, wl, rq, k);
        return k;
      } catch (const CompileError& e) {
        std::cerr << fmt::format("kiln: warning: the tuned schedule of '{}' does not fit here ({}); using the default\n",
                                 g.node(id).name, e.what());
      }
    }
  return default_conv2d_knobs(env, wl, rq);
}

graph::LoweredGroup lower_node(const Env& env, const Graph& g, NodeId id, const std::string& name,
                               const graph::KnobHook& hook, const std::string& records_key) {
  const Node& n = g.node(id);
  graph::LoweredGroup r;
  r.inputs = n.inputs;
  r.nodes = {id};
  r.outputs = {id};
  if (n.op == "conv2d_packed") {
    NodeId x = n.inputs[0], w = n.inputs[1];
    Conv2DWorkload wl;
    wl.name = name;
    wl.batch = dim(g, x, 0) * dim(g, x, 4);
    wl.in_channels = dim(g, x, 1) * dim(g, x, 5);
    wl.height = dim(g, x, 2);
    wl.width = dim(g, x, 3);
    wl.out_channels = dim(g, w, 0) * dim(g, w, 4);
    wl.kernel_h = dim(g, w, 2);
    wl.kernel_w = dim(g, w, 3);
    auto s = n.attrs.get_ints("strides", {1, 1});
    auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    wl.stride_h = static_cast<int>(s.at(0));
    wl.stride_w = static_cast<int>(s.at(1));
    wl.pad_h = static_cast<int>(p.at(0));
    wl.pad_w = static_cast<int>(p.at(1));
    Requant rq{true, static_cast<int>(n.attrs.get_int("shift", 0)), n.attrs.get_int("relu", 0) != 0};
    Conv2DOp op = conv2d_packed(env, wl, rq);
    r.func = schedule::lower(schedule_conv2d(env, op, conv2d_knobs(env, wl, rq, g, id, hook, records_key)), op.args(), name);
    return r;
  }
  if (n.op == "add_packed") {
    NodeId a = n.inputs[0];
    AddWorkload wl{name, dim(g, a, 0) * dim(g, a, 4), dim(g, a, 1) * dim(g, a, 5), dim(g, a, 2), dim(g, a, 3)};
    Requant rq{false, static_cast<int>(n.attrs.get_int("shift", 0)), n.attrs.get_int("relu", 0) != 0};
    AddScales sc{static_cast<int>(n.attrs.get_int("shift_a", 0)), static_cast<int>(n.attrs.get_int("shift_b", 0)),
                 static_cast<int>(n.attrs.get_int("round", 0))};
    AddOp op = add_packed(env, wl, rq, sc);
    r.func = schedule::lower(schedule_add(env, op, default_add_knobs(env, wl)), op.args(), name);
    return r;
  }
  if (n.op == "max_pool2d_packed") {
    NodeId x = n.inputs[0];
    auto k = n.attrs.get_ints("kernel");
    auto s = n.attrs.get_ints("strides", {1, 1});
    auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    PoolWorkload wl{name,
                    dim(g, x, 0) * dim(g, x, 4),
                    dim(g, x, 1) * dim(g, x, 5),
                    dim(g, x, 2),
                    dim(g, x, 3),
                    static_cast<int>(k.at(0)),
                    static_cast<int>(k.at(1)),
                    static_cast<int>(p.at(0)),
                    static_cast<int>(p.at(1)),
                    static_cast<int>(s.at(0)),
                    static_cast<int>(s.at(1))};
    PoolOp op = max_pool2d_packed(env, wl);
    r.func = schedule::lower(schedule_max_pool2d(env, op, default_pool_knobs(env, wl)), op.args(), name);
    return r;
  }
  throw CompileError(fmt::format("node '{}' ({}) is marked for the accelerator, which has no strategy for it", n.name, n.op));
}

class VtaStrategy : public graph::Strategy {
 public:
  std::string kind() const override { return "vta"; }

  target::Target resolve(const target::Target& t) const override {
    hw::Config cfg = [&] {
      try {
        return config_of(t);
      } catch (const hw::Error& e) {
        throw CompileError(fmt::format("target '{}': {}", t.str(), e.what()));
      }
    }();
    target::Target r = t;
    std::string fp = fmt::format("{:016x}", cfg.fingerprint());
    if (t.has_option("fingerprint") && t.option("fingerprint") != fp)
      throw CompileError(fmt::format("target '{}': configuration '{}' has fingerprint {}, not {}", t.str(), cfg.name(), fp,
                                     t.option("fingerprint")));
    r.set_option("config", t.option("config", "default"));
    r.set_option("fingerprint", fp);
    return r;
  }

  Graph place(const Graph& g, const target::Target& t, std::vector<Placement>& report) const override {
    Env env(config_of(t));
    return Placer(g, t, env, report).run();
  }

  std::string records_key(const target::Target& t) const override {
    return target::Target("vta", {{"config", t.option("config", "default")}, {"fingerprint", t.option("fingerprint")}}).str();
  }

  graph::LoweredGroup lower(const Graph& g, NodeId node, const std::string& name, const target::Target& t) const override {
    return lower(g, node, name, t, {});
  }

  graph::LoweredGroup lower(const Graph& g, NodeId node, const std::string& name, const target::Target& t,
                            const graph::KnobHook& knobs) const override {
    Env env(config_of(t));
    try {
      return lower_node(env, g, node, name, knobs, records_key(t));
    } catch (const CompileError& e) {
      throw CompileError(fmt::format("node '{}' on {}: {}", g.node(node).name, t.str(), e.what()));
    }
  }
};

// ---------------------------------------------------------------- backend

class VtaKernels : public target::KernelModule {
 public:
  VtaKernels(const target::Target& t, std::vector<Program> programs)
      : target_(t.str()), programs_(std::move(programs)) {
    hw::Config cfg = config_of(t);
    for (const Program& p : programs_)
      if (p.config().fingerprint() != cfg.fingerprint())
        throw CompileError(fmt::format("program '{}' was compiled for configuration '{}', the target is '{}'", p.name(),
                                       p.config().name(), cfg.name()));
    try {
      device_ = driver::make_device(t.option("device", "fsim"), cfg, device_options_of(t));
      for (const Program& p : programs_) {
        std::vector<runtime::DeviceBuffer> bufs;
        for (const ProgramArg& a : p.args()) bufs.emplace_back(*device_, a.bytes());
        buffers_.push_back(std::move(bufs));
      }
    } catch (const hw::Error& e) {
      throw CompileError(fmt::format("target '{}': {}", target_, e.what()));
    }
    counters_.resize(programs_.size());
    host_bytes_.resize(programs_.size());
  }

  // The plan's buffers in device DRAM, one per buffer the accelerator's kernels name
  // (the plan has already shared them by lifetime), instead of one per argument.
  void plan_memory(const std::vector<std::vector<target::ArgUse>>& kernels) override {
    if (kernels.size() != programs_.size())
      throw CompileError(fmt::format("the executor plans {} accelerator kernels, the module holds {}", kernels.size(),
                                     programs_.size()));
    std::map<int, int64_t> bytes;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const Program& p = programs_[i];
      if (kernels[i].size() != p.args().size())
        throw CompileError(fmt::format("kernel '{}' takes {} arguments, the executor plans {}", p.name(), p.args().size(),
                                       kernels[i].size()));
      for (size_t k = 0; k < kernels[i].size(); ++k) {
        const target::ArgUse& u = kernels[i][k];
        if (static_cast<uint64_t>(u.bytes) < p.args()[k].bytes())
          throw CompileError(fmt::format("kernel '{}': argument '{}' needs {} bytes, its buffer has {}", p.name(),
                                         p.args()[k].name, p.args()[k].bytes(), u.bytes));
        bytes[u.buffer] = std::max(bytes[u.buffer], u.bytes);
      }
    }
    buffers_.clear();  // the per-argument buffers of a module used without a plan
    std::map<int, runtime::DeviceBuffer> dram;
    try {
      for (const auto& [b, n] : bytes) dram.emplace(b, runtime::DeviceBuffer(*device_, static_cast<size_t>(n)));
    } catch (const hw::Error& e) {
      throw CompileError(fmt::format("target '{}': the model's tensors do not fit the device's DRAM: {}", target_, e.what()));
    }
    uses_ = kernels;
    dram_ = std::move(dram);
    written_.clear();
  }

  void call(size_t index, void* const* args) const override {
    const Program& p = programs_.at(index);
    size_t n = p.args().size();
    uint64_t copied = 0;  // between the host and the device's DRAM
    std::vector<runtime::DeviceBuffer*> bufs;
    if (uses_.empty()) {
      for (auto& b : buffers_.at(index)) bufs.push_back(&b);
    } else {
      for (const target::ArgUse& u : uses_.at(index)) bufs.push_back(&dram_.at(u.buffer));
    }
    for (size_t k = 0; k + 1 < n; ++k) {
      if (!uses_.empty()) {
        const target::ArgUse& u = uses_[index][k];
        if (u.device_only) continue;  // an earlier kernel of this module left it there
        if (u.constant && !written_.insert(u.buffer).second) continue;
      }
      bufs[k]->write({static_cast<const uint8_t*>(args[k]), p.args()[k].bytes()});
      copied += p.args()[k].bytes();
    }
    std::vector<driver::DevAddr> addrs;
    for (const auto* b : bufs) addrs.push_back(b->address());
    try {
      counters_[index] = p.run(*device_, addrs);
    } catch (const hw::Error& e) {
      throw CompileError(fmt::format("kernel '{}' on {}: {}", p.name(), target_, e.what()));
    }
    if (uses_.empty() || !uses_[index][n - 1].device_only) {
      bufs[n - 1]->read({static_cast<uint8_t*>(args[n - 1]), p.args()[n - 1].bytes()});
      copied += p.args()[n - 1].bytes();
    }
    host_bytes_[index] = copied;
  }

  std::string save() const override {
    nlohmann::json j;
    j["target"] = target_;
    for (const Program& p : programs_) j["programs"].push_back(nlohmann::json::parse(p.to_json()));
    return j.dump();
  }

  std::vector<target::KernelStats> stats() const override {
    std::vector<target::KernelStats> r;
    for (size_t k = 0; k < programs_.size(); ++k) {
      const Program& p = programs_[k];
      ProgramStats ps = p.stats();
      target::KernelStats s{p.name(), {}};
      auto c = [&](hw::regs::Counter key) -> double {
        auto it = counters_[k].find(key);
        return it == counters_[k].end() ? 0.0 : static_cast<double>(it->second);
      };
      double cycles = c(hw::regs::Counter::kCycles);
      s.values["gemm_uops"] = static_cast<double>(ps.gemm_uops);
      if (device_->has_counter(hw::regs::Counter::kCycles)) {
        s.values["cycles"] = cycles;
        s.values["gemm_utilization"] = cycles > 0 ? static_cast<double>(ps.gemm_uops) / cycles : 0;
      }
      s.values["dram_bytes"] = static_cast<double>(ps.bytes_loaded + ps.bytes_stored);
      s.values["host_bytes"] = static_cast<double>(host_bytes_[k]);
      r.push_back(std::move(s));
    }
    return r;
  }

 private:
  std::string target_;
  std::vector<Program> programs_;
  std::unique_ptr<driver::Device> device_;
  mutable std::vector<std::vector<runtime::DeviceBuffer>> buffers_;  // per kernel and argument, without a plan
  std::vector<std::vector<target::ArgUse>> uses_;                    // with one (plan_memory)
  mutable std::map<int, runtime::DeviceBuffer> dram_;                // per plan buffer
  mutable std::set<int> written_;                                    // constants already in DRAM
  mutable std::vector<driver::Counters> counters_;
  mutable std::vector<uint64_t> host_bytes_;  // copied to and from the host in the last call
};

class VtaBackend : public target::Backend {
 public:
  std::string name() const override { return "vta"; }
  // The configuration, the device that runs the kernels, the configuration's
  // fingerprint (resolve() adds it), and every device setting (hw/driver's list, checked
  // against the device when the kernels are built).
  std::vector<std::string> option_names() const override {
    std::vector<std::string> names{"config", "device", "fingerprint"};
    for (const driver::DeviceSetting& s : driver::device_settings()) names.emplace_back(s.name);
    return names;
  }

  std::unique_ptr<target::KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs,
                                              const std::string& options) const override {
    target::Target t = target::Target::parse(options);
    Env env(config_of(t));
    std::vector<Program> programs;
    for (const auto& f : funcs) {
      try {
        programs.push_back(codegen(env, f));
      } catch (const CompileError& e) {
        throw CompileError(fmt::format("kernel '{}' on {}: {}", f.name, t.str(), e.what()));
      }
    }
    return std::make_unique<VtaKernels>(t, std::move(programs));
  }

  std::unique_ptr<target::KernelModule> load(const std::string& bytes,
                                             const std::vector<target::KernelSignature>& kernels) const override {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(bytes);
      target::Target t = target::Target::parse(j.at("target").get<std::string>());
      hw::Config cfg = config_of(t);
      std::vector<Program> programs;
      for (const auto& p : j.at("programs")) programs.push_back(Program::from_json(p.dump(), cfg, "saved model"));
      if (programs.size() != kernels.size())
        throw CompileError(fmt::format("the saved accelerator kernels hold {} programs, the plan names {}", programs.size(),
                                       kernels.size()));
      for (size_t k = 0; k < programs.size(); ++k)
        if (programs[k].name() != kernels[k].name || static_cast<int>(programs[k].args().size()) != kernels[k].num_args)
          throw CompileError(fmt::format("saved program {} ('{}') does not match kernel '{}'", k, programs[k].name(),
                                         kernels[k].name));
      return std::make_unique<VtaKernels>(t, std::move(programs));
    } catch (const nlohmann::json::exception& e) {
      throw CompileError(std::string("corrupt accelerator kernels: ") + e.what());
    } catch (const hw::Error& e) {
      throw CompileError(std::string("accelerator kernels: ") + e.what());
    }
  }
};

}  // namespace

driver::DeviceOptions device_options_of(const target::Target& t) {
  driver::DeviceOptions o = default_device_options();
  std::string device = t.option("device", "fsim");
  for (const auto& [key, value] : t.options()) {
    const driver::DeviceSetting* s = driver::find_device_setting(key);
    if (!s) continue;  // the backend's own (config, fingerprint, ...)
    try {
      driver::apply_device_setting(o, device, *s, value, "-" + key);
    } catch (const hw::Error& e) {
      throw CompileError(fmt::format("target '{}': {}", t.str(), e.what()));
    }
  }
  return o;
}

void register_graph_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    graph::register_strategy("vta", [] { return std::make_unique<VtaStrategy>(); });
    target::register_backend("vta", [] { return std::make_unique<VtaBackend>(); });
  });
}

}  // namespace kiln::vta
