// Integer graphs in the canonical form of quantized models, compiled for the
// accelerator: what is placed, and that the heterogeneous executor's results on fsim
// and rtl equal the CPU's execution of the same graph, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "backend-cpu/graph_backend.h"
#include "backend-vta/graph_target.h"
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"
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
    vta::register_graph_target();
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new Registered);

template <typename T>
graph::ConstData constant(DataType d, std::vector<int64_t> shape, const std::vector<T>& values) {
  auto b = std::make_shared<interp::HostBuffer>(d, shape);
  std::memcpy(b->data(), values.data(), values.size() * sizeof(T));
  return b;
}

template <typename T>
std::vector<T> random_ints(size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

// cast<int8>(clip(right_shift(add(conv2d<int32>(x, w), bias), shift))).
NodeId conv_chain(Graph& g, NodeId x, int out_channels, int k, int stride, int shift, bool relu, uint32_t seed) {
  int64_t c = g.type(x).shape[1];
  int pad = k / 2;
  NodeId w = g.add_constant("w" + std::to_string(seed),
                            constant(DataType::Int(8), {out_channels, c, k, k},
                                     random_ints<int8_t>(static_cast<size_t>(out_channels * c * k * k), -3, 3, seed)));
  NodeId b = g.add_constant("b" + std::to_string(seed),
                            constant(DataType::Int(32), {1, out_channels, 1, 1},
                                     random_ints<int32_t>(static_cast<size_t>(out_channels), -200, 200, seed + 1)));
  NodeId acc = g.add_op("conv2d", {x, w},
                        {{"strides", std::vector<int64_t>{stride, stride}},
                         {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                         {"out_dtype", std::string("int32")}},
                        "conv" + std::to_string(seed));
  acc = g.add_op("add", {acc, b});
  if (shift) acc = g.add_op("right_shift", {acc, g.add_scalar("k", DataType::Int(32), shift)});
  acc = g.add_op("clip", {acc}, {{"min", relu ? 0.0 : -128.0}, {"max", 127.0}});
  return g.add_op("cast", {acc}, {{"dtype", std::string("int8")}});
}

// The residual add at scales 2^sa and 2^sb into the output's.
NodeId add_chain(Graph& g, NodeId a, NodeId b, int shift_a, int shift_b, int round, int shift, bool relu) {
  auto widen = [&](NodeId x, int s) {
    NodeId w = g.add_op("cast", {x}, {{"dtype", std::string("int32")}});
    if (s > 0) w = g.add_op("right_shift", {w, g.add_scalar("s", DataType::Int(32), s)});
    if (s < 0) w = g.add_op("left_shift", {w, g.add_scalar("s", DataType::Int(32), -s)});
    return w;
  };
  NodeId sum = g.add_op("add", {widen(a, shift_a), widen(b, shift_b)});
  if (round) sum = g.add_op("add", {sum, g.add_scalar("r", DataType::Int(32), round)});
  if (shift) sum = g.add_op("right_shift", {sum, g.add_scalar("k", DataType::Int(32), shift)});
  sum = g.add_op("clip", {sum}, {{"min", relu ? 0.0 : -128.0}, {"max", 127.0}});
  return g.add_op("cast", {sum}, {{"dtype", std::string("int8")}}, "residual");
}

// A residual block and a strided 1x1 convolution, ending on the host (a float output).
Graph block_graph(int channels = 32, int size = 14) {
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Int(8), {1, channels, size, size}});
  NodeId y1 = conv_chain(g, x, channels, 3, 1, 4, true, 11);
  NodeId y2 = conv_chain(g, y1, channels, 3, 1, 5, false, 21);
  NodeId y3 = add_chain(g, y1, y2, 1, -1, 2, 2, true);
  NodeId y4 = conv_chain(g, y3, 2 * channels, 1, 2, 3, true, 31);
  NodeId f = g.add_op("cast", {y4}, {{"dtype", std::string("float32")}});
  g.add_output(g.add_op("multiply", {f, g.add_scalar("scale", DataType::Float(32), 0.125)}), "y");
  return g;
}

std::vector<int8_t> input_of(const Graph& g) {
  return random_ints<int8_t>(static_cast<size_t>(g.type(g.inputs()[0]).size()), -40, 40, 7);
}

using test::compile_for;
using test::run;

std::vector<float> run_on(const Graph& g, const std::string& target) { return test::run_on(g, target, input_of(g)); }

int count_op(const Graph& g, const std::string& op, bool on_vta) {
  int n = 0;
  for (const auto& node : g.nodes())
    if (node.op == op && (graph::node_target(node) == "vta") == on_vta) n++;
  return n;
}

TEST(VtaGraph, PlacesConvolutionsAndTheResidualAdd) {
  graph::CompiledModel m = compile_for(block_graph(), "vta -config=default -device=fsim");
  EXPECT_EQ(count_op(m.graph, "conv2d_packed", true), 3);
  EXPECT_EQ(count_op(m.graph, "add_packed", true), 1);
  EXPECT_EQ(count_op(m.graph, "conv2d", false), 0);
  // One pack at the input and one unpack at the end: the accelerator's nodes pass
  // packed tensors to each other, and the weights were packed at compile time.
  EXPECT_EQ(count_op(m.graph, "layout_pack", false), 1);
  EXPECT_EQ(count_op(m.graph, "layout_unpack", false), 1);
  EXPECT_EQ(count_op(m.graph, "layout_pack_weight", false), 0);
  ASSERT_EQ(m.placement.size(), 4u);
  for (const auto& p : m.placement) EXPECT_EQ(p.target, "vta") << p.node << ": " << p.reason;
  int accel = 0;
  for (const auto& k : m.kernels) accel += k.on_accelerator;
  EXPECT_EQ(accel, 4);
  EXPECT_FALSE(m.target.option("fingerprint").empty());
}

TEST(VtaGraph, FsimMatchesTheCpuBitForBit) {
  Graph g = block_graph();
  std::vector<float> cpu = run_on(g, "cpu");
  std::vector<float> vta = run_on(g, "vta -config=default -device=fsim");
  ASSERT_EQ(cpu.size(), vta.size());
  EXPECT_EQ(cpu, vta);
  int nonzero = 0;
  for (float v : cpu) nonzero += v != 0;
  EXPECT_GT(nonzero, static_cast<int>(cpu.size() / 4)) << "the test graph saturates to zero";
}

TEST(VtaGraph, OtherConfigurations) {
  Graph g = block_graph(16, 8);
  std::vector<float> cpu = run_on(g, "cpu");
  EXPECT_EQ(run_on(g, "vta -config=tiny -device=fsim"), cpu);
  EXPECT_EQ(run_on(g, "vta -config=small -device=fsim"), cpu);
}

#ifdef KILN_HAVE_RTL
TEST(VtaGraph, RtlMatchesTheCpuBitForBit) {
  Graph g = block_graph();
  graph::Executor ex = graph::make_executor(compile_for(g, "vta -config=default -device=rtl"), "cpu", "llvm");
  EXPECT_EQ(run(ex, input_of(g)), run_on(g, "cpu"));
  auto stats = ex.accelerator()->stats();
  ASSERT_EQ(stats.size(), 4u);
  for (const auto& s : stats) {
    EXPECT_GT(s.values.at("cycles"), s.values.at("gemm_uops")) << s.name;
    EXPECT_GT(s.values.at("gemm_utilization"), 0.05) << s.name;
  }
}
#endif

TEST(VtaGraph, PackageSavesAndLoadsWithAcceleratorKernels) {
  Graph g = block_graph();
  graph::Executor ex = graph::make_executor(compile_for(g, "vta -config=default -device=fsim"), "cpu", "llvm");
  std::string path = (std::filesystem::temp_directory_path() / "kiln-vta-graph-test.kiln").string();
  graph::save_model(path, ex, "cpu", "llvm");
  graph::Executor loaded = graph::load_model(path);
  std::filesystem::remove(path);
  ASSERT_NE(loaded.accelerator(), nullptr);
  EXPECT_EQ(run(loaded, input_of(g)), run_on(g, "cpu"));
}

// A graph of one convolution chain on x [1, C, size, size], ending on the host.
Graph one_conv(int in_channels, int out_channels, int size, int k, uint32_t seed = 41) {
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Int(8), {1, in_channels, size, size}});
  NodeId y = conv_chain(g, x, out_channels, k, 1, 4, true, seed);
  g.add_output(g.add_op("cast", {y}, {{"dtype", std::string("float32")}}), "y");
  return g;
}

TEST(VtaGraph, ChannelsArePaddedToWholeBlocks) {
  // 24 and 20 channels are not multiples of default's 16-wide blocks: zero channels
  // are added on the way in and sliced off on the way out.
  Graph g = one_conv(20, 24, 8, 3);
  graph::CompiledModel m = compile_for(g, "vta -config=default -device=fsim");
  ASSERT_EQ(m.placement.size(), 1u);
  EXPECT_EQ(m.placement[0].target, "vta") << m.placement[0].reason;
  EXPECT_EQ(run_on(g, "vta -config=default -device=fsim"), run_on(g, "cpu"));
}

TEST(VtaGraph, DenseLayersRunAsConvolutions) {
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Int(8), {1, 40}});
  NodeId w = g.add_constant("w", constant(DataType::Int(8), {10, 40}, random_ints<int8_t>(400, -5, 5, 3)));
  NodeId b = g.add_constant("b", constant(DataType::Int(32), {1, 10}, random_ints<int32_t>(10, -100, 100, 4)));
  NodeId acc = g.add_op("dense", {x, w}, {{"out_dtype", std::string("int32")}}, "fc");
  acc = g.add_op("add", {acc, b});
  acc = g.add_op("right_shift", {acc, g.add_scalar("k", DataType::Int(32), 2)});
  acc = g.add_op("clip", {acc}, {{"min", -128.0}, {"max", 127.0}});
  NodeId y = g.add_op("cast", {acc}, {{"dtype", std::string("int8")}});
  g.add_output(g.add_op("cast", {y}, {{"dtype", std::string("float32")}}), "y");
  graph::CompiledModel m = compile_for(g, "vta -device=fsim");
  ASSERT_EQ(m.placement.size(), 1u);
  EXPECT_EQ(m.placement[0].op, "dense");
  EXPECT_EQ(m.placement[0].target, "vta") << m.placement[0].reason;
  EXPECT_EQ(run_on(g, "vta -device=fsim"), run_on(g, "cpu"));
}

TEST(VtaGraph, WhatDoesNotFitStaysOnTheCpuWithAReason) {
  // A 17x17 kernel's smallest tile needs 289 weight elements; tiny's buffer has 256.
  Graph g = one_conv(4, 4, 17, 17);
  graph::CompiledModel m = compile_for(g, "vta -config=tiny -device=fsim");
  ASSERT_EQ(m.placement.size(), 1u);
  EXPECT_EQ(m.placement[0].target, "cpu");
  EXPECT_NE(m.placement[0].reason.find("tiny"), std::string::npos) << m.placement[0].reason;
  for (const auto& k : m.kernels) EXPECT_FALSE(k.on_accelerator);
  EXPECT_EQ(run_on(g, "vta -config=tiny -device=fsim"), run_on(g, "cpu"));
}

TEST(VtaGraph, FloatModelsRunOnTheHostAndSaySo) {
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Float(32), {1, 16, 8, 8}});
  std::vector<float> w(16 * 16 * 9, 0.01f);
  NodeId wc = g.add_constant("w", constant(DataType::Float(32), {16, 16, 3, 3}, w));
  g.add_output(g.add_op("conv2d", {x, wc}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "fconv"), "y");
  graph::CompiledModel m = compile_for(g, "vta -device=fsim");
  for (const auto& k : m.kernels) EXPECT_FALSE(k.on_accelerator);
  bool said = false;
  for (const auto& p : m.placement) said |= p.target == "cpu" && p.reason.find("not quantized") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(VtaGraph, BadTargetsAreClearErrors) {
  Graph g = block_graph(16, 8);
  EXPECT_THROW(compile_for(g, "vta -config=nosuch"), CompileError);
  EXPECT_THROW(compile_for(g, "vta -config=default -fingerprint=0123456789abcdef"), CompileError);
  EXPECT_THROW(compile_for(g, "vta config=default"), CompileError);
  EXPECT_THROW(compile_for(g, "npu"), CompileError);
  try {
    graph::make_executor(compile_for(g, "vta -device=nosuch"), "cpu", "llvm");
    FAIL() << "an unknown device must be refused";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("nosuch"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
