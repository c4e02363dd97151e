// The MXU example (examples/matrix-unit) as a target of the graph compiler: integer
// graphs in quantize_realize's canonical form compiled for "mxu" and for the CPU, the
// outputs equal bit for bit; what is placed and why the rest is not; a .kiln package
// with MXU kernels saved and loaded; corrupt saved kernels refused.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "backend-cpu/graph_backend.h"
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"
#include "examples/matrix-unit/mxu_target.h"
#include "tests/support/graph_run.h"

namespace kiln {
namespace {

using graph::Graph;
using graph::NodeId;
using graph::TensorType;
using ir::DataType;

class Registered : public ::testing::Environment {
 public:
  void SetUp() override {
    cpu::register_graph_backend();
    mxu::register_mxu_target();
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new Registered);

// A constant of `shape` filled with integers in [lo, hi] (seeded).
NodeId random_constant(Graph& g, DataType d, std::vector<int64_t> shape, int lo, int hi, uint32_t seed) {
  auto b = std::make_shared<interp::HostBuffer>(d, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  for (int64_t i = 0; i < b->size(); ++i) {
    if (d == DataType::Int(8)) reinterpret_cast<int8_t*>(b->data())[i] = static_cast<int8_t>(u(rng));
    else reinterpret_cast<int32_t*>(b->data())[i] = u(rng);
  }
  return g.add_constant("c" + std::to_string(seed), b);
}

struct Conv {
  int out = 8, k = 3, stride = 1, dilation = 1, groups = 1, shift = 4;
  bool relu = true;
};

// The requantized chain cast<int8>(clip(right_shift(add(conv2d<int32>(x, w), bias), shift))).
NodeId conv(Graph& g, NodeId x, const Conv& c, uint32_t seed) {
  int64_t in = g.type(x).shape[1];
  int pad = c.dilation * (c.k / 2);
  NodeId w = random_constant(g, DataType::Int(8), {c.out, in / c.groups, c.k, c.k}, -4, 4, seed);
  NodeId b = random_constant(g, DataType::Int(32), {1, c.out, 1, 1}, -300, 300, seed + 1);
  NodeId y = g.add_op("conv2d", {x, w},
                      {{"strides", std::vector<int64_t>{c.stride, c.stride}},
                       {"dilations", std::vector<int64_t>{c.dilation, c.dilation}},
                       {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                       {"groups", int64_t{c.groups}},
                       {"out_dtype", std::string("int32")}},
                      "conv" + std::to_string(seed));
  y = g.add_op("right_shift", {g.add_op("add", {y, b}), g.add_scalar("s", DataType::Int(32), c.shift)});
  y = g.add_op("clip", {y}, {{"min", c.relu ? 0.0 : -128.0}, {"max", 127.0}});
  return g.add_op("cast", {y}, {{"dtype", std::string("int8")}});
}

NodeId dense(Graph& g, NodeId x, int units, int shift, uint32_t seed) {
  NodeId w = random_constant(g, DataType::Int(8), {units, g.type(x).shape[1]}, -4, 4, seed);
  NodeId b = random_constant(g, DataType::Int(32), {1, units}, -300, 300, seed + 1);
  NodeId y = g.add_op("dense", {x, w}, {{"out_dtype", std::string("int32")}}, "fc" + std::to_string(seed));
  y = g.add_op("right_shift", {g.add_op("add", {y, b}), g.add_scalar("s", DataType::Int(32), shift)});
  y = g.add_op("clip", {y}, {{"min", -128.0}, {"max", 127.0}});
  return g.add_op("cast", {y}, {{"dtype", std::string("int8")}});
}

// The layer kinds of ResNet-18 at a small size: 3x3 convolutions at strides 1 and 2, a
// strided 1x1 shortcut, a dilated and an un-padded channel count, a dense layer; and a
// grouped convolution the MXU does not take.
Graph layers_graph() {
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Int(8), {2, 12, 11, 11}});
  NodeId y = conv(g, x, {.out = 20}, 10);
  y = conv(g, y, {.out = 40, .stride = 2, .relu = false}, 20);
  NodeId s = conv(g, y, {.out = 36, .k = 1, .stride = 2, .shift = 3}, 30);
  y = conv(g, y, {.out = 36, .stride = 2, .dilation = 2}, 40);
  y = conv(g, y, {.out = 36, .groups = 4}, 50);
  NodeId sum = g.add_op("add", {g.add_op("cast", {y}, {{"dtype", std::string("int32")}}),
                                g.add_op("cast", {s}, {{"dtype", std::string("int32")}})});
  sum = g.add_op("cast", {g.add_op("clip", {sum}, {{"min", -128.0}, {"max", 127.0}})}, {{"dtype", std::string("int8")}});
  NodeId flat = g.add_op("reshape", {sum}, {{"shape", std::vector<int64_t>{2, 36 * 3 * 3}}});
  NodeId f = g.add_op("cast", {dense(g, flat, 10, 5, 60)}, {{"dtype", std::string("float32")}});
  g.add_output(f, "y");
  return g;
}

std::vector<int8_t> input_of(const Graph& g) {
  std::vector<int8_t> x(static_cast<size_t>(g.type(g.inputs()[0]).size()));
  std::mt19937 rng(7);
  for (auto& v : x) v = static_cast<int8_t>(static_cast<int>(rng() % 81) - 40);
  return x;
}

using test::compile_for;
using test::run;
using test::save_and_load;

std::vector<float> run_on(const Graph& g, const std::string& target) { return test::run_on(g, target, input_of(g)); }

TEST(MxuGraph, PlacesConvolutionsAndDenseLayers) {
  graph::CompiledModel m = compile_for(layers_graph(), "mxu");
  EXPECT_EQ(m.target.str(), "mxu -a_kb=32 -acc_kb=16 -dram_mb=64 -w_kb=64");
  ASSERT_EQ(m.placement.size(), 6u);
  int placed = 0;
  for (const auto& p : m.placement) {
    if (p.node == "conv50") {
      EXPECT_EQ(p.target, "cpu");
      EXPECT_NE(p.reason.find("grouped"), std::string::npos) << p.reason;
    } else {
      EXPECT_EQ(p.target, "mxu") << p.node << ": " << p.reason;
      placed++;
    }
  }
  EXPECT_EQ(placed, 5);
  int kernels = 0;
  for (const auto& k : m.kernels) kernels += k.on_accelerator;
  EXPECT_EQ(kernels, 5);
  // The weights were packed into the MXU's tiles at compile time.
  for (const auto& n : m.graph.nodes()) {
    if (n.op != "mxu_matmul") continue;
    EXPECT_TRUE(m.graph.node(n.inputs[1]).is_constant()) << n.name;
  }
}

TEST(MxuGraph, MatchesTheCpuBitForBit) {
  Graph g = layers_graph();
  graph::Executor ex = graph::make_executor(compile_for(g, "mxu"), "cpu", "llvm");
  std::vector<float> mxu = run(ex, input_of(g)), cpu = run_on(g, "cpu");
  EXPECT_EQ(mxu, cpu);
  int nonzero = 0;
  for (float v : cpu) nonzero += v != 0;
  EXPECT_GT(nonzero, static_cast<int>(cpu.size() / 2)) << "the test graph saturates to zero";
  std::vector<double> ms = ex.run_profiled();
  graph::AcceleratorReport r = graph::accelerator_report(ex, ms);
  ASSERT_EQ(r.layers.size(), 5u);
  EXPECT_GT(r.cycles, r.ideal_cycles);
  for (const auto& l : r.layers) EXPECT_GT(l.values.at("matmuls"), 0) << l.kernel;
}

TEST(MxuGraph, SmallScratchpadsGiveTheSameResult) {
  Graph g = layers_graph();
  EXPECT_EQ(run_on(g, "mxu -a_kb=1 -w_kb=1 -acc_kb=1"), run_on(g, "cpu"));
}

TEST(MxuGraph, PackageSavesAndLoads) {
  Graph g = layers_graph();
  graph::Executor ex = graph::make_executor(compile_for(g, "mxu"), "cpu", "llvm");
  graph::Executor loaded = save_and_load(ex, "kiln-mxu-graph-test");
  ASSERT_NE(loaded.accelerator(), nullptr);
  EXPECT_EQ(run(loaded, input_of(g)), run_on(g, "cpu"));
}

TEST(MxuGraph, CorruptSavedKernelsAreRefused) {
  Graph g = layers_graph();
  graph::Executor ex = graph::make_executor(compile_for(g, "mxu"), "cpu", "llvm");
  std::string saved = ex.accelerator()->save();
  auto sigs = ex.plan().signatures(true);
  auto backend = target::make_backend("mxu");
  EXPECT_THROW(backend->load(saved.substr(0, saved.size() / 2), sigs), CompileError);
  sigs.pop_back();
  EXPECT_THROW(backend->load(saved, sigs), CompileError);
  // A command that reads past its scratchpad loads (the device checks as it runs) and fails the run.
  auto pos = saved.find("\"commands\":[[");
  ASSERT_NE(pos, std::string::npos);
  // The first command's op, arg, dram and sram become load_a, 0, 0 and far past the scratchpad.
  size_t fields = pos + 13, end = fields;
  for (int commas = 0; commas < 4; ++end) commas += saved[end] == ',';
  std::string bad = saved;
  bad.replace(fields, end - 1 - fields, "0,0,0,4000000000");
  auto module = backend->load(bad, ex.plan().signatures(true));
  std::vector<std::vector<uint8_t>> bufs(4, std::vector<uint8_t>(1 << 20));
  std::vector<void*> args;
  for (auto& b : bufs) args.push_back(b.data());
  try {
    module->call(0, args.data());
    ADD_FAILURE() << "a command past the scratchpad ran";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("MXU command 0 (load_a)"), std::string::npos) << e.what();
  }
}

TEST(MxuGraph, BadTargetOptions) {
  EXPECT_THROW(compile_for(layers_graph(), "mxu -a_kb=lots"), CompileError);
  EXPECT_THROW(compile_for(layers_graph(), "mxu -w_kb=0"), CompileError);
  EXPECT_THROW(compile_for(layers_graph(), "mxu -dram_mb=100000000"), CompileError);
}

}  // namespace
}  // namespace kiln
