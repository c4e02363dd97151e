#include "examples/matrix-unit/mxu_target.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "compiler/graph/op.h"
#include "compiler/graph/quant_pattern.h"
#include "compiler/graph/strategy.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "compiler/te/tensor.h"
#include "examples/matrix-unit/mxu_codegen.h"
#include "support/integer.h"

namespace kiln::mxu {

namespace {

using graph::Attrs;
using graph::Graph;
using graph::Node;
using graph::NodeId;
using graph::Placement;
using graph::TensorType;
using ir::DataType;
using ir::Expr;

constexpr int64_t kM = MxuConfig::kTileM, kK = MxuConfig::kTileK, kN = MxuConfig::kTileN;
constexpr const char* kCall = "mxu.matmul";

// ---------------------------------------------------------------- the target's options

// An option in 1..max (the device allocates what it says).
int64_t int_option(const target::Target& t, const std::string& key, int64_t def, int64_t max) {
  std::string v = t.option(key);
  if (v.empty()) return def;
  try {
    size_t used = 0;
    int64_t r = std::stoll(v, &used);
    if (used == v.size() && r > 0 && r <= max) return r;
  } catch (const std::exception&) {
  }
  throw CompileError(fmt::format("target '{}': -{}={} is not an integer in 1..{}", t.str(), key, v, max));
}

MxuConfig config_of(const target::Target& t) {
  MxuConfig c;
  c.a_bytes = int_option(t, "a_kb", c.a_bytes >> 10, 1 << 16) << 10;
  c.w_bytes = int_option(t, "w_kb", c.w_bytes >> 10, 1 << 16) << 10;
  c.acc_bytes = int_option(t, "acc_kb", c.acc_bytes >> 10, 1 << 16) << 10;
  c.dram_bytes = int_option(t, "dram_mb", c.dram_bytes >> 20, 4096) << 20;
  return c;
}

// ---------------------------------------------------------------- the operator

// mxu_matmul(a int8 [M, K], w int8 [K/32, N/8, 32, 8], bias int32 [N]) {shift, relu}
//   = cast<int8>(clip((a W + bias) >> shift, relu ? 0 : -128, 127)) : int8 [M, N]
TensorType infer_matmul(const std::vector<TensorType>& in, const Attrs&) {
  const TensorType &a = in[0], &w = in[1], &b = in[2];
  if (a.ndim() != 2 || a.dtype != DataType::Int(8)) throw CompileError("mxu_matmul: a must be int8 [M, K], is " + a.to_string());
  if (w.ndim() != 4 || w.dtype != DataType::Int(8) || w.shape[2] != kK || w.shape[3] != kN)
    throw CompileError("mxu_matmul: w must be int8 [K/32, N/8, 32, 8], is " + w.to_string());
  if (a.shape[1] != w.shape[0] * kK) throw CompileError(fmt::format("mxu_matmul: a {} does not match w {}", a.to_string(), w.to_string()));
  if (b.ndim() != 1 || b.dtype != DataType::Int(32) || b.shape[0] != w.shape[1] * kN)
    throw CompileError(fmt::format("mxu_matmul: bias {} does not match w {}", b.to_string(), w.to_string()));
  return TensorType{DataType::Int(8), {a.shape[0], b.shape[0]}};
}

te::Tensor compute_matmul(const std::vector<te::Tensor>& in, const Attrs& attrs, const TensorType& out) {
  const te::Tensor &a = in[0], &w = in[1], &bias = in[2];
  int kt = static_cast<int>(*ir::as_const_int(w->shape[0]));
  ir::IterVar rt = te::reduce_axis(kt, "rt"), ri = te::reduce_axis(static_cast<int>(kK), "ri");
  DataType i32 = DataType::Int(32);
  te::Tensor acc = te::compute(
      graph::te_shape(out),
      [&](const std::vector<ir::Var>& i) {
        Expr k = rt->var * static_cast<int>(kK) + ri->var;
        Expr wv = w(rt->var, i[1] / static_cast<int>(kN), ri->var, i[1] % static_cast<int>(kN));
        return te::sum(ir::cast(i32, a(i[0], k)) * ir::cast(i32, wv), {rt, ri});
      },
      "mxu_matmul.acc", "matmul");
  int shift = static_cast<int>(attrs.get_int("shift", 0));
  int lo = attrs.get_int("relu", 0) ? 0 : -128;
  return te::compute(
      graph::te_shape(out),
      [&](const std::vector<ir::Var>& i) {
        Expr v = ir::shift_right(acc(i[0], i[1]) + bias(i[1]), ir::make_const(i32, shift));
        return ir::cast(DataType::Int(8), ir::max(ir::min(v, ir::make_const(i32, 127)), ir::make_const(i32, lo)));
      },
      "mxu_matmul", "elemwise");
}

// ---------------------------------------------------------------- placement

// Why the MXU does not take a matched chain, or "".
std::string chain_problem(const Graph& g, const graph::ConvChain& m, const MxuConfig& config, MatmulKernel* kernel) {
  const Node& conv = g.node(m.conv);
  if (!m.dense && conv.attrs.get_int("groups", 1) != 1) return "grouped convolutions do not map onto the MXU";
  if (!m.dense && conv.attrs.get_ints("pads", {0, 0, 0, 0}).size() != 4) return "the MXU's im2col takes 2-d convolutions";
  const auto& y = conv.type.shape;
  int64_t rows = m.dense ? y[0] : y[0] * y[2] * y[3];
  const auto& w = g.type(m.weight).shape;
  int64_t depth = m.dense ? w[1] : w[1] * w[2] * w[3];
  *kernel = MatmulKernel{conv.name, round_up(rows, kM), round_up(depth, kK), round_up(w[0], kN), static_cast<int>(m.shift), m.relu};
  return matmul_problem(config, *kernel);
}

class Placer {
 public:
  Placer(const Graph& old, const target::Target& t, const MxuConfig& config, std::vector<Placement>& report)
      : old_(old), rw_(old), t_(t), config_(config), report_(report) {}

  Graph run() {
    std::vector<int> uses = old_.use_counts();
    std::map<NodeId, graph::ConvChain> chains;
    std::set<NodeId> interior, reported;
    for (NodeId id = 0; id < old_.size(); ++id) {
      if (old_.node(id).op != "cast") continue;
      auto m = graph::match_conv_chain(old_, uses, id);
      if (!m) continue;
      MatmulKernel kernel;
      std::string why = chain_problem(old_, *m, config_, &kernel);
      const Node& conv = old_.node(m->conv);
      report_.push_back({conv.name, conv.op, why.empty() ? t_.kind() : "cpu", why});
      reported.insert(m->conv);
      if (!why.empty()) continue;
      chains[id] = *m;
      interior.insert(m->interior.begin(), m->interior.end());
    }
    for (NodeId id = 0; id < old_.size(); ++id) {
      const Node& n = old_.node(id);
      if (n.is_input() || interior.count(id)) continue;
      if (chains.count(id)) {
        place(id, chains[id]);
        continue;
      }
      if ((n.op == "conv2d" || n.op == "conv2d_nchwc" || n.op == "dense" || n.op == "matmul") && !reported.count(id))
        report_.push_back({n.name, n.op, "cpu", n.type.dtype.is_float() ? "not quantized" : "not a requantized int8 chain"});
      rw_.copy(id);
    }
    return rw_.finish();
  }

 private:
  NodeId op(const std::string& name, std::vector<NodeId> in, Attrs a, const std::string& node) {
    return rw_.graph().add_op(name, std::move(in), std::move(a), node);
  }
  NodeId reshape(NodeId x, std::vector<int64_t> shape, const std::string& name) { return op("reshape", {x}, {{"shape", shape}}, name); }
  NodeId transpose(NodeId x, std::vector<int64_t> perm, const std::string& name) { return op("transpose", {x}, {{"perm", perm}}, name); }
  // `x` zero-padded at the end of each dimension to `shape`, or `x`.
  NodeId pad_to(NodeId x, const std::vector<int64_t>& shape, const std::string& name) {
    const std::vector<int64_t> s = rw_.graph().type(x).shape;
    if (s == shape) return x;
    std::vector<int64_t> pads(2 * s.size(), 0);
    for (size_t d = 0; d < s.size(); ++d) pads[s.size() + d] = shape[d] - s[d];
    return op("pad", {x}, {{"pads", pads}, {"value", 0.0}}, name);
  }
  NodeId slice(NodeId x, std::vector<int64_t> begin, std::vector<int64_t> end, std::vector<int64_t> steps, const std::string& name) {
    return op("strided_slice", {x}, {{"begin", begin}, {"end", end}, {"steps", steps}}, name);
  }

  // The im2col rows of a convolution's input: [B*OH*OW, KH*KW*C], column (kh*KW + kw)*C + c.
  NodeId im2col(const Node& conv, NodeId x) {
    const std::vector<int64_t> xs = rw_.graph().type(x).shape;  // copies: adding nodes moves the graph
    const auto& ws = old_.type(conv.inputs[1]).shape;
    const auto& ys = conv.type.shape;
    auto s = conv.attrs.get_ints("strides", {1, 1});
    auto d = conv.attrs.get_ints("dilations", {1, 1});
    auto p = conv.attrs.get_ints("pads", {0, 0, 0, 0});
    if (p[0] || p[1] || p[2] || p[3]) x = op("pad", {x}, {{"pads", std::vector<int64_t>{0, 0, p[0], p[1], 0, 0, p[2], p[3]}}, {"value", 0.0}}, conv.name + ".im2col_pad");
    std::vector<NodeId> taps;
    for (int64_t kh = 0; kh < ws[2]; ++kh)
      for (int64_t kw = 0; kw < ws[3]; ++kw) {
        std::vector<int64_t> begin{0, 0, kh * d[0], kw * d[1]};
        std::vector<int64_t> end{xs[0], xs[1], kh * d[0] + (ys[2] - 1) * s[0] + 1, kw * d[1] + (ys[3] - 1) * s[1] + 1};
        const std::vector<int64_t> full = rw_.graph().type(x).shape;
        bool whole = begin[2] == 0 && begin[3] == 0 && end[2] == full[2] && end[3] == full[3] && s[0] == 1 && s[1] == 1;
        taps.push_back(whole ? x : slice(x, begin, end, {1, 1, s[0], s[1]}, conv.name + ".im2col_tap"));
      }
    NodeId cols = taps.size() == 1 ? taps[0] : op("concatenate", taps, {{"axis", int64_t{1}}}, conv.name + ".im2col");
    cols = transpose(cols, {0, 2, 3, 1}, conv.name + ".im2col_nhwc");
    return reshape(cols, {ys[0] * ys[2] * ys[3], ws[1] * ws[2] * ws[3]}, conv.name + ".im2col_rows");
  }

  void place(NodeId id, const graph::ConvChain& m) {
    const Node& conv = old_.node(m.conv);
    const std::string& name = conv.name;
    MatmulKernel k;
    chain_problem(old_, m, config_, &k);
    const auto& ws = old_.type(m.weight).shape;
    const auto& ys = conv.type.shape;
    int64_t out_channels = ws[0], rows = m.dense ? ys[0] : ys[0] * ys[2] * ys[3];
    // Activations: im2col rows (a dense layer's input is its own), padded to whole tiles.
    NodeId a = m.dense ? rw_.map(m.x) : im2col(conv, rw_.map(m.x));
    a = pad_to(a, {k.m, k.k}, name + ".rows_padded");
    // Weights [O, C(, KH, KW)] -> [K, N] -> the MXU's tiles [K/32, N/8, 32, 8] (constants: folded).
    NodeId w = transpose(rw_.map(m.weight), m.dense ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{2, 3, 1, 0}, name + ".weight_kn");
    w = reshape(w, {ws.size() == 2 ? ws[1] : ws[1] * ws[2] * ws[3], out_channels}, name + ".weight_kn");
    w = pad_to(w, {k.k, k.n}, name + ".weight_padded");
    w = transpose(reshape(w, {k.k / kK, kK, k.n / kN, kN}, name + ".weight_tiles"), {0, 2, 1, 3}, name + ".weight_tiles");
    NodeId bias = pad_to(reshape(rw_.map(m.bias), {out_channels}, name + ".bias"), {k.n}, name + ".bias_padded");
    NodeId y = op("mxu_matmul", {a, w, bias}, {{"shift", m.shift}, {"relu", int64_t{m.relu}}, {"target", t_.kind()}}, name);
    // The host's view: the padding sliced off, then NCHW for a convolution.
    if (k.m != rows || k.n != out_channels) y = slice(y, {0, 0}, {rows, out_channels}, {1, 1}, name + ".unpadded");
    if (!m.dense) y = transpose(reshape(y, {ys[0], ys[2], ys[3], out_channels}, name + ".nhwc"), {0, 3, 1, 2}, old_.node(id).name);
    rw_.set(id, y);
  }

  const Graph& old_;
  graph::GraphRewriter rw_;
  const target::Target& t_;
  const MxuConfig& config_;
  std::vector<Placement>& report_;
};

// ---------------------------------------------------------------- strategy

class MxuStrategy : public graph::Strategy {
 public:
  std::string kind() const override { return "mxu"; }

  // The scratchpad sizes are part of the target, so a compiled model names them.
  target::Target resolve(const target::Target& t) const override {
    MxuConfig c = config_of(t);
    target::Target r = t;
    r.set_option("a_kb", std::to_string(c.a_bytes >> 10));
    r.set_option("w_kb", std::to_string(c.w_bytes >> 10));
    r.set_option("acc_kb", std::to_string(c.acc_bytes >> 10));
    r.set_option("dram_mb", std::to_string(c.dram_bytes >> 20));
    return r;
  }

  Graph place(const Graph& g, const target::Target& t, std::vector<Placement>& report) const override {
    MxuConfig c = config_of(t);
    return Placer(g, t, c, report).run();
  }

  // One call the backend compiles: mxu.matmul(m, k, n, shift, relu) on the node's buffers.
  graph::LoweredGroup lower(const Graph& g, NodeId node, const std::string& name, const target::Target& t) const override {
    const Node& n = g.node(node);
    if (n.op != "mxu_matmul")
      throw CompileError(fmt::format("node '{}' ({}) is marked for {}, which runs only mxu_matmul", n.name, n.op, t.str()));
    graph::LoweredGroup r;
    r.inputs = n.inputs;
    r.outputs = {node};
    r.func.name = name;
    const char* names[] = {"a", "w", "bias", "out"};
    for (size_t k = 0; k < 4; ++k) {
      const TensorType& type = g.type(k < 3 ? n.inputs[k] : node);
      r.func.args.emplace_back(names[k], type.dtype, graph::te_shape(type));
    }
    const auto& a = g.type(n.inputs[0]).shape;
    auto i = [](int64_t v) { return Expr(static_cast<int>(v)); };
    r.func.body = ir::make_evaluate(ir::make_call(DataType::Int(32), kCall,
                                                  {i(a[0]), i(a[1]), i(n.type.shape[1]), i(n.attrs.get_int("shift", 0)),
                                                   i(n.attrs.get_int("relu", 0))}));
    return r;
  }
};

// ---------------------------------------------------------------- backend

// A kernel the module runs: its commands and the size of each DRAM argument.
struct Kernel {
  MatmulKernel shape;
  std::vector<Command> commands;
  std::array<int64_t, 4> bytes{};
};

std::array<int64_t, 4> argument_bytes(const MatmulKernel& k) { return {k.m * k.k, k.k * k.n, 4 * k.n, k.m * k.n}; }

// What a lowered function asks for: its one mxu.matmul call, checked against its buffers.
MatmulKernel kernel_of(const schedule::LoweredFunc& f) {
  const auto* eval = f.body.as<ir::EvaluateNode>();
  const auto* call = eval ? eval->value.as<ir::CallNode>() : nullptr;
  if (!call || call->name != kCall || call->args.size() != 5 || f.args.size() != 4)
    throw CompileError(fmt::format("kernel '{}': the MXU backend builds one {} call on 4 buffers", f.name, kCall));
  std::array<int64_t, 5> v{};
  for (size_t k = 0; k < 5; ++k) {
    const int64_t* c = ir::as_const_int(call->args[k]);
    if (!c) throw CompileError(fmt::format("kernel '{}': argument {} of {} is not a constant", f.name, k, kCall));
    v[k] = *c;
  }
  MatmulKernel m{f.name, v[0], v[1], v[2], static_cast<int>(v[3]), v[4] != 0};
  std::array<int64_t, 4> bytes = argument_bytes(m);
  for (size_t k = 0; k < 4; ++k) {
    int64_t n = f.args[k]->dtype.storage_bytes();
    for (const Expr& e : f.args[k]->shape) n *= *ir::as_const_int(e);
    if (n != bytes[k])
      throw CompileError(fmt::format("kernel '{}': buffer {} holds {} bytes, a {}x{}x{} product needs {}", f.name,
                                     f.args[k]->name, n, m.m, m.k, m.n, bytes[k]));
  }
  return m;
}

class MxuKernels : public target::KernelModule {
 public:
  MxuKernels(const target::Target& t, std::vector<Kernel> kernels)
      : target_(t.str()), kernels_(std::move(kernels)), device_(config_of(t)) {
    try {
      for (const Kernel& k : kernels_) {
        std::vector<uint64_t> addrs;
        for (int64_t b : k.bytes) addrs.push_back(device_.alloc(b));
        addrs_.push_back(std::move(addrs));
      }
    } catch (const MxuError& e) {
      throw CompileError(fmt::format("target '{}': {}", target_, e.what()));
    }
    last_.resize(kernels_.size());
  }

  void call(size_t index, void* const* args) const override {
    const Kernel& k = kernels_.at(index);
    const auto& addrs = addrs_[index];
    try {
      for (size_t a = 0; a < 3; ++a)
        device_.write(addrs[a], {static_cast<const uint8_t*>(args[a]), static_cast<size_t>(k.bytes[a])});
      last_[index] = device_.run(k.commands, addrs);
      device_.read(addrs[3], {static_cast<uint8_t*>(args[3]), static_cast<size_t>(k.bytes[3])});
    } catch (const MxuError& e) {
      throw CompileError(fmt::format("kernel '{}' on {}: {}", k.shape.name, target_, e.what()));
    }
  }

  std::string save() const override {
    nlohmann::json j;
    j["target"] = target_;
    j["kernels"] = nlohmann::json::array();
    for (const Kernel& k : kernels_) {
      nlohmann::json cmds = nlohmann::json::array();
      for (const Command& c : k.commands)
        cmds.push_back({static_cast<int>(c.op), c.arg, c.dram, c.sram, c.rows, c.cols, c.stride, c.a, c.a_pitch, c.w, c.acc,
                        c.acc_pitch, c.shift, c.relu});
      j["kernels"].push_back({{"name", k.shape.name}, {"m", k.shape.m}, {"k", k.shape.k}, {"n", k.shape.n}, {"commands", cmds}});
    }
    return j.dump();
  }

  std::vector<target::KernelStats> stats() const override {
    std::vector<target::KernelStats> r;
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const RunStats& s = last_[k];
      // The keys the executor's report and `kiln run` read (VTA's names): "gemm_uops" is
      // taken as the ideal cycles, one tile's M rows per product.
      double ideal = static_cast<double>(ideal_matmuls(kernels_[k].shape) * kM);
      r.push_back({kernels_[k].shape.name,
                   {{"cycles", static_cast<double>(s.cycles)},
                    {"gemm_uops", ideal},
                    {"gemm_utilization", s.cycles > 0 ? ideal / static_cast<double>(s.cycles) : 0.0},
                    {"matmuls", static_cast<double>(s.matmuls)},
                    {"weight_fills", static_cast<double>(s.weight_fills)},
                    {"dram_bytes", static_cast<double>(s.dram_bytes)}}});
    }
    return r;
  }

 private:
  std::string target_;
  std::vector<Kernel> kernels_;
  mutable MxuDevice device_;
  std::vector<std::vector<uint64_t>> addrs_;
  mutable std::vector<RunStats> last_;
};

Command command_of(const nlohmann::json& c) {
  if (!c.is_array() || c.size() != 14) throw CompileError("an MXU command is an array of 14 fields");
  int op = c[0].get<int>();
  if (op < 0 || op > static_cast<int>(Opcode::kStore)) throw CompileError(fmt::format("unknown MXU opcode {}", op));
  Command r{static_cast<Opcode>(op)};
  r.arg = c[1].get<int>();
  r.dram = c[2].get<uint64_t>();
  r.sram = c[3].get<uint32_t>();
  r.rows = c[4].get<uint32_t>();
  r.cols = c[5].get<uint32_t>();
  r.stride = c[6].get<uint32_t>();
  r.a = c[7].get<uint32_t>();
  r.a_pitch = c[8].get<uint32_t>();
  r.w = c[9].get<uint32_t>();
  r.acc = c[10].get<uint32_t>();
  r.acc_pitch = c[11].get<uint32_t>();
  r.shift = c[12].get<int>();
  r.relu = c[13].get<bool>();
  return r;
}

class MxuBackend : public target::Backend {
 public:
  std::string name() const override { return "mxu"; }
  std::vector<std::string> option_names() const override { return {"a_kb", "w_kb", "acc_kb", "dram_mb"}; }

  std::unique_ptr<target::KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs,
                                              const std::string& options) const override {
    target::Target t = target::Target::parse(options);
    MxuConfig config = config_of(t);
    std::vector<Kernel> kernels;
    for (const auto& f : funcs) {
      Kernel k{kernel_of(f), {}, {}};
      try {
        k.commands = matmul_commands(config, k.shape);
      } catch (const MxuError& e) {
        throw CompileError(fmt::format("kernel '{}' on {}: {}", f.name, t.str(), e.what()));
      }
      k.bytes = argument_bytes(k.shape);
      kernels.push_back(std::move(k));
    }
    return std::make_unique<MxuKernels>(t, std::move(kernels));
  }

  // Commands come back as saved, not generated again; the device checks each as it runs.
  std::unique_ptr<target::KernelModule> load(const std::string& bytes,
                                             const std::vector<target::KernelSignature>& sigs) const override {
    try {
      nlohmann::json j = nlohmann::json::parse(bytes);
      target::Target t = target::Target::parse(j.at("target").get<std::string>());
      std::vector<Kernel> kernels;
      for (const auto& k : j.at("kernels")) {
        Kernel r;
        r.shape = MatmulKernel{k.at("name").get<std::string>(), k.at("m").get<int64_t>(), k.at("k").get<int64_t>(),
                               k.at("n").get<int64_t>(), 0, false};
        if (std::string why = matmul_problem(config_of(t), r.shape); !why.empty()) throw CompileError(why);
        for (const auto& c : k.at("commands")) r.commands.push_back(command_of(c));
        r.bytes = argument_bytes(r.shape);
        kernels.push_back(std::move(r));
      }
      if (kernels.size() != sigs.size())
        throw CompileError(fmt::format("the saved MXU module holds {} kernels, the plan names {}", kernels.size(), sigs.size()));
      for (size_t k = 0; k < kernels.size(); ++k)
        if (kernels[k].shape.name != sigs[k].name || sigs[k].num_args != 4)
          throw CompileError(fmt::format("saved MXU kernel {} ('{}') does not match kernel '{}'", k, kernels[k].shape.name, sigs[k].name));
      return std::make_unique<MxuKernels>(t, std::move(kernels));
    } catch (const nlohmann::json::exception& e) {
      throw CompileError(std::string("corrupt MXU kernels: ") + e.what());
    }
  }
};

}  // namespace

void register_mxu_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    graph::register_op({"mxu_matmul", graph::OpPattern::Opaque, 3, 0, infer_matmul, compute_matmul});
    graph::register_strategy("mxu", [] { return std::make_unique<MxuStrategy>(); });
    target::register_backend("mxu", [] { return std::make_unique<MxuBackend>(); });
  });
}

}  // namespace kiln::mxu
