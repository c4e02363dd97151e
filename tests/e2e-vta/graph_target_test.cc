// Integer graphs in the canonical form of quantized models, compiled for the
// accelerator: what is placed, and that the heterogeneous executor's results on fsim
// and rtl equal the CPU's execution of the same graph, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "backend-cpu/graph_backend.h"
#include "backend-vta/graph_target.h"
#include "compiler/graph/executor.h"
#include "compiler/support/error.h"
#include "tests/support/graph_run.h"
#ifdef KILN_HAVE_TUNER_VTA
#include <unistd.h>

#include <set>
#include <sstream>

#include "compiler/ir/printer.h"
#include "hw/spec/config_files.h"
#include "tuner/apply.h"
#include "tuner/vta_templates.h"
#endif

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
using test::save_and_load;

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
  graph::Executor loaded = save_and_load(ex, "kiln-vta-graph-test");
  ASSERT_NE(loaded.accelerator(), nullptr);
  EXPECT_EQ(run(loaded, input_of(g)), run_on(g, "cpu"));
}

TEST(VtaGraph, TensorsBetweenAcceleratorKernelsStayInItsMemory) {
  // conv11's output feeds conv21 and the residual add, conv21's only the add: neither
  // goes through the host. The weights are copied into device DRAM on the first run only.
  Graph g = block_graph();
  graph::CompiledModel m = compile_for(g, "vta -config=default -device=fsim");
  std::map<std::string, size_t> index;  // node name -> its place among the accelerator's kernels
  for (const auto& k : m.kernels)
    if (k.on_accelerator) index.emplace(m.graph.node(k.outputs.at(0)).name, index.size());
  ASSERT_TRUE(index.count("conv21")) << "conv21 is not on the accelerator";
  graph::Executor ex = graph::make_executor(m, "cpu", "llvm");
  auto host_bytes = [&] {
    std::vector<double> b;
    for (const auto& s : ex.accelerator()->stats()) b.push_back(s.values.at("host_bytes"));
    return b;
  };
  graph::Executor cpu = graph::make_executor(compile_for(g, "cpu"), "cpu", "llvm");
  std::vector<int8_t> x = input_of(g);
  EXPECT_EQ(run(ex, x), run(cpu, x));
  std::vector<double> first = host_bytes();
  EXPECT_GT(first[index["conv21"]], 0);  // its weights and bias
  // A second input: only what the host produces or reads is copied now.
  for (auto& v : x) v = static_cast<int8_t>(-v / 2);
  EXPECT_EQ(run(ex, x), run(cpu, x));
  std::vector<double> second = host_bytes();
  EXPECT_EQ(second[index["conv21"]], 0);
  double before = 0, after = 0;
  for (size_t k = 0; k < first.size(); ++k) before += first[k], after += second[k];
  EXPECT_LT(after, before);
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

TEST(VtaGraph, ResidualAddsArePaddedToWholeBlocksToo) {
  // MobileNetV2's 24-channel blocks: the add reads the padded convolution's packed
  // output directly (its padding channels are zeros) and the input packed once.
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Int(8), {1, 24, 8, 8}});
  NodeId y = conv_chain(g, x, 24, 3, 1, 4, false, 51);
  NodeId z = add_chain(g, x, y, 0, 1, 1, 1, true);
  g.add_output(g.add_op("cast", {z}, {{"dtype", std::string("float32")}}), "z");
  graph::CompiledModel m = compile_for(g, "vta -config=default -device=fsim");
  for (const auto& p : m.placement) EXPECT_EQ(p.target, "vta") << p.node << ": " << p.reason;
  EXPECT_EQ(count_op(m.graph, "add_packed", true), 1);
  EXPECT_EQ(count_op(m.graph, "layout_pack", false), 1);
  EXPECT_EQ(count_op(m.graph, "layout_unpack", false), 1);
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

// ResNet-18's max pool (3x3, stride 2, padding 1) between two accelerator convolutions,
// and a 2x2 pool of the host's int8 input (negative values too) before the first.
Graph pool_graph(bool relu_before_pool) {
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Int(8), {1, 16, 16, 16}});
  NodeId x2 = g.add_op("max_pool2d", {x},
                       {{"kernel", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{1, 1}}}, "input_pool");
  NodeId y1 = conv_chain(g, x2, 16, 3, 1, 4, relu_before_pool, 51);
  NodeId p = g.add_op("max_pool2d", {y1},
                      {{"kernel", std::vector<int64_t>{3, 3}},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                      "pool");
  NodeId y2 = conv_chain(g, p, 32, 3, 1, 5, true, 61);
  g.add_output(g.add_op("cast", {y2}, {{"dtype", std::string("float32")}}), "y");
  return g;
}

const graph::Placement& placement_of(const graph::CompiledModel& m, const std::string& node) {
  for (const auto& p : m.placement)
    if (p.node == node) return p;
  throw std::runtime_error("no placement for " + node);
}

TEST(VtaGraph, MaxPoolingRunsOnTheAcceleratorBitForBit) {
  Graph g = pool_graph(true);
  graph::CompiledModel m = compile_for(g, "vta -config=default -device=fsim");
  EXPECT_EQ(count_op(m.graph, "max_pool2d_packed", true), 1);
  EXPECT_EQ(placement_of(m, "pool").target, "vta") << placement_of(m, "pool").reason;
  // A pool of the host's tensor stays there (packing its smaller output is cheaper).
  EXPECT_EQ(count_op(m.graph, "max_pool2d", false), 1);
  EXPECT_EQ(placement_of(m, "input_pool").target, "cpu");
  EXPECT_NE(placement_of(m, "input_pool").reason.find("comes from the host"), std::string::npos)
      << placement_of(m, "input_pool").reason;
  // The pool takes its packed input from the convolution and gives its output to the
  // next one: the host packs the input once and unpacks the result once.
  EXPECT_EQ(count_op(m.graph, "layout_pack", false), 1);
  EXPECT_EQ(count_op(m.graph, "layout_unpack", false), 1);
  std::vector<float> cpu = run_on(g, "cpu");
  EXPECT_EQ(run_on(g, "vta -config=default -device=fsim"), cpu);
  EXPECT_EQ(run_on(g, "vta -config=tiny -device=fsim"), cpu);
}

TEST(VtaGraph, PaddedPoolingOfSignedDataStaysOnTheCpu) {
  // Without the ReLU the pool's -inf padding differs from the load's zeros.
  Graph g = pool_graph(false);
  graph::CompiledModel m = compile_for(g, "vta -config=default -device=fsim");
  const graph::Placement& p = placement_of(m, "pool");
  EXPECT_EQ(p.target, "cpu");
  EXPECT_NE(p.reason.find("-inf"), std::string::npos) << p.reason;
  EXPECT_EQ(run_on(g, "vta -config=default -device=fsim"), run_on(g, "cpu"));
}

#ifdef KILN_HAVE_RTL
TEST(VtaGraph, MaxPoolingOnTheRtlMatchesTheCpu) {
  Graph g = pool_graph(true);
  EXPECT_EQ(run_on(g, "vta -config=default -device=rtl"), run_on(g, "cpu"));
}
#endif

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

#ifdef KILN_HAVE_TUNER_VTA
// Tuning records of the accelerator are keyed by its configuration and fingerprint;
// a compile for that target schedules its convolutions with the best one.
TEST(VtaGraph, RecordsAreKeyedByConfigurationAndFingerprint) {
  std::string def = graph::records_key_of(target::Target::parse("vta -config=default -device=rtl"));
  EXPECT_EQ(def, graph::records_key_of(target::Target::parse("vta -config=default")));  // the device does not count
  EXPECT_NE(def.find("-fingerprint="), std::string::npos) << def;
  EXPECT_NE(def, graph::records_key_of(target::Target::parse("vta -config=tiny")));
  EXPECT_EQ(graph::records_key_of(target::Target::parse("cpu")), "cpu");
}

std::string kernel_text(const graph::CompiledModel& m, const std::string& node) {
  for (const auto& k : m.kernels)
    if (k.on_accelerator && m.graph.node(k.outputs.at(0)).name == node) return ir::to_string(k.func.body);
  ADD_FAILURE() << "no accelerator kernel for " << node;
  return "";
}

TEST(VtaGraph, TunedRecordsScheduleTheAcceleratorsConvolutions) {
  Graph g = block_graph();
  const std::string target = "vta -config=default -device=fsim";
  std::vector<std::pair<tuner::Workload, std::string>> tasks =
      tuner::model_workloads(g, target::Target::parse(target));
  // conv11 and conv21 share a shape; conv31 is the strided 1x1.
  ASSERT_EQ(tasks.size(), 2u);
  tuner::register_vta_templates(hw::load_config("default"));
  const tuner::Template& t = tuner::find_template("conv2d.vta");
  const tuner::Workload& w = tasks[0].first;
  tuner::ConfigSpace space = t.space(w);
  // One-row tiles without threads: legal, and not what the cycle model picks.
  int64_t pick = space.index_of({{"tile_h", "1"}, {"tile_w", "14"}, {"tile_oc", "1"}, {"tile_ic", "1"},
                                 {"threads", "1"}, {"double_buffer", "off"}});
  auto record = [&](const std::string& key, double cost) {
    tuner::Record r;
    r.template_name = t.name;
    r.workload = w.key();
    r.target = key;
    r.config = pick;
    r.knobs = space.get(pick).describe();
    r.cost = cost;
    r.unit = "cycles";
    return r;
  };
  auto dir = std::filesystem::temp_directory_path() / ("kiln_vta_records_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto compile_with = [&](const std::string& records, tuner::ApplyStats& stats) {
    std::ostringstream warn;
    graph::CompileOptions o;
    o.target = target::Target::parse(target);
    o.knob_hook = tuner::knobs_hook(records, warn, &stats);
    return graph::compile(g, o);
  };
  graph::CompiledModel plain = compile_for(g, target);

  // Only a record of another configuration: nothing applies.
  std::string tiny_only = (dir / "tiny.jsonl").string();
  tuner::RecordWriter(tiny_only).append(record(graph::records_key_of(target::Target::parse("vta -config=tiny")), 10));
  tuner::ApplyStats none;
  graph::CompiledModel untuned = compile_with(tiny_only, none);
  EXPECT_TRUE(none.applied.empty());
  EXPECT_EQ(none.missing.size(), 2u);
  EXPECT_EQ(kernel_text(untuned, "conv11"), kernel_text(plain, "conv11"));

  // This configuration's record schedules both convolutions of its shape.
  std::string mine = (dir / "default.jsonl").string();
  tuner::RecordWriter(mine).append(record(graph::records_key_of(target::Target::parse(target)), 1000));
  tuner::ApplyStats stats;
  graph::CompiledModel tuned = compile_with(mine, stats);
  EXPECT_EQ(stats.applied, std::set<std::string>{w.key()});
  EXPECT_EQ(stats.missing, std::set<std::string>{tasks[1].first.key()});
  EXPECT_NE(kernel_text(tuned, "conv11"), kernel_text(plain, "conv11"));
  EXPECT_NE(kernel_text(tuned, "conv21"), kernel_text(plain, "conv21"));
  EXPECT_EQ(kernel_text(tuned, "conv31"), kernel_text(plain, "conv31"));
  // and the tuned programs compute the same result as the CPU.
  graph::Executor ex = graph::make_executor(tuned, "cpu", "llvm");
  EXPECT_EQ(run(ex, input_of(g)), run_on(g, "cpu"));
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace kiln
