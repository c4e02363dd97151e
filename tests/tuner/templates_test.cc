// Every template computes what the default schedule computes: random configurations of
// each CPU template, on the CPU backend, against the reference interpreter (a Winograd
// convolution's against its own stages on the interpreter, whole and partial tiles).
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "backend-cpu/graph_backend.h"
#include "compiler/graph/executor.h"
#include "compiler/ir/printer.h"
#include "compiler/target/backend.h"
#include "tuner/template.h"

namespace kiln::tuner {
namespace {

void check_config(const Template& t, const Workload& w, const Config& c) {
  graph::NodeId node = -1;
  graph::Graph g = workload_graph(w, &node);
  graph::CompileOptions tuned;
  tuned.optimize = false;
  tuned.schedule_hook = [&](const graph::AnchorStage& a) {
    t.apply(a, w, c);
    return true;
  };
  graph::CompileOptions plain;
  plain.optimize = false;
  graph::Executor got = graph::make_executor(graph::compile(g, tuned), "cpu");
  graph::Executor want = graph::make_executor(graph::compile(g, plain), "interp");
  std::mt19937 rng(static_cast<unsigned>(c.index()));
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t k = 0; k < got.num_inputs(); ++k) {
    std::vector<float> v(static_cast<size_t>(got.input_type(k).size()));
    for (float& x : v) x = u(rng);
    got.set_input(k, v.data(), static_cast<int64_t>(v.size() * 4));
    want.set_input(k, v.data(), static_cast<int64_t>(v.size() * 4));
  }
  got.run();
  want.run();
  const float* a = static_cast<const float*>(got.output(0));
  const float* b = static_cast<const float*>(want.output(0));
  for (int64_t i = 0; i < got.output_type(0).size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-3) << t.name << " " << w.key() << " config " << c.index() << " at " << i;
}

TEST(Templates, RandomConfigurationsMatchTheInterpreter) {
  cpu::register_graph_backend();
  std::mt19937_64 rng(11);
  for (const char* spec : {"matmul:M=48,N=64,K=24", "dense:M=8,N=32,K=20", "conv2d:C=8,H=10,W=10,O=16,KH=3,pad=1",
                           "conv2d:C=4,H=9,W=9,O=16,KH=3,stride=2", "conv2d_winograd:C=16,H=12,W=12,O=32",
                           "conv2d_winograd:N=2,C=8,H=9,W=11,O=16,tile=2,in_block=8",
                           // Grouped: groups of 8 on NCHWc data in blocks of 16 (a block
                           // holds two groups), groups of 4 in blocks of 4, strided.
                           "conv2d:C=48,H=9,W=9,O=48,KH=3,pad=1,groups=6,in_block=16",
                           "conv2d:C=32,H=8,W=8,O=32,KH=3,pad=1,stride=2,groups=8,in_block=8"}) {
    Workload w = parse_workload(spec);
    const Template& t = *templates_for(w.op, "cpu").at(0);
    ConfigSpace s = t.space(w);
    for (int k = 0; k < 6; ++k) {
      int64_t i = std::uniform_int_distribution<int64_t>(0, s.size() - 1)(rng);
      SCOPED_TRACE(std::string(spec) + " config " + std::to_string(i));
      check_config(t, w, s.get(i));
    }
  }
}

// A matrix-vector product (one row tile, whose steps prefetch ahead in the weight):
// every configuration, panels alone or fused with the row tile in parallel.
TEST(Templates, EveryMatrixVectorConfigurationMatchesTheInterpreter) {
  cpu::register_graph_backend();
  Workload w = parse_workload("matmul_packed:M=1,N=80,K=96,block=16");
  const Template& t = find_template("matmul_packed.cpu");
  ConfigSpace s = t.space(w);
  std::set<std::string> parallel;
  for (int64_t i = 0; i < s.size(); ++i) {
    Config c = s.get(i);
    parallel.insert(c.name("parallel"));
    SCOPED_TRACE(w.key() + " config " + std::to_string(i));
    check_config(t, w, c);
  }
  EXPECT_EQ(parallel, (std::set<std::string>{"panels", "panels_rows"}));
}

// Each order of a Winograd convolution's stages (the products over all tiles slice by
// slice, tile by tile, or a row of image tiles at a time with its transforms), with
// whole and partial tiles, two images.
TEST(Templates, EveryWinogradOrderMatchesTheInterpreter) {
  cpu::register_graph_backend();
  for (const char* spec : {"conv2d_winograd:C=16,H=12,W=12,O=32", "conv2d_winograd:N=2,C=8,H=9,W=11,O=16,tile=2,in_block=8",
                           "conv2d_winograd:C=16,H=15,W=13,O=16"}) {
    Workload w = parse_workload(spec);
    const Template& t = *templates_for(w.op, "cpu").at(0);
    ConfigSpace s = t.space(w);
    std::set<std::string> seen;
    for (int64_t i = s.size(); i-- > 0;) {
      Config c = s.get(i);
      if (!seen.insert(c.name("order")).second) continue;
      SCOPED_TRACE(std::string(spec) + " order " + c.name("order"));
      check_config(t, w, c);
    }
    EXPECT_EQ(seen, (std::set<std::string>{"slices", "tiles", "rows"})) << spec;
  }
}

// Template::default_config names the configuration whose schedule is the compiler's own
// default for the workload on a machine: lowered with it, and lowered with no hook at
// all, the loop nests print the same; on this host and on AVX2's Haswell (`kiln tune -t
// "llvm -mcpu=haswell"`: 16 registers of 8 lanes, whose defaults differ from AVX-512's).
TEST(Templates, TheDefaultConfigurationIsTheDefaultSchedule) {
  cpu::register_graph_backend();
  for (const std::string target : {"cpu", "llvm -mcpu=haswell"})
  for (auto [name, key] : std::vector<std::pair<std::string, std::string>>{
           {"conv2d_nchwc.cpu", "conv2d:N=1,C=32,H=14,W=14,O=64,KH=3,KW=3,stride=1,pad=1,block=16,in_block=16"},
           {"conv2d_nchwc.cpu", "conv2d:N=1,C=144,H=56,W=56,O=32,KH=1,KW=1,stride=1,pad=0,block=16,in_block=16"},
           {"conv2d_nchwc.cpu", "conv2d:N=1,C=3,H=32,W=32,O=32,KH=3,KW=3,stride=2,pad=1,block=16"},
           {"conv2d_nchwc.cpu", "conv2d:N=1,C=104,H=16,W=16,O=104,KH=3,KW=3,stride=1,pad=1,block=8,in_block=8,groups=13"},
           // MobileNetV2's 112x112 expansion: its row tiles outermost (the knob's `n_oh`).
           {"conv2d_nchwc.cpu", "conv2d:N=1,C=16,H=112,W=112,O=96,KH=1,KW=1,stride=1,pad=0,block=16,in_block=16"},
           // Inception-V3's 17x17 rows: a whole row a register tile.
           {"conv2d_nchwc.cpu", "conv2d:N=1,C=128,H=17,W=23,O=192,KH=1,KW=7,stride=1,pad=0,block=16,in_block=16"},
           // SqueezeNet 1.0's first convolution, 109 pixels a row: tiles of 8, the last partial.
           {"conv2d_nchwc.cpu", "conv2d:N=1,C=3,H=224,W=224,O=96,KH=7,KW=7,stride=2,pad=0,block=16"},
           {"matmul_packed.cpu", "matmul_packed:M=128,N=768,K=768,block=64"},
           {"matmul_packed.cpu", "matmul_packed:M=1,N=1000,K=1280,block=40"},
           // ViT's 197 tokens: row tiles, the last one partial; with few panels, the row
           // tiles parallel outermost.
           {"matmul_packed.cpu", "matmul_packed:M=197,N=768,K=768,block=64"},
           {"matmul_packed.cpu", "matmul_packed:M=197,N=96,K=96,block=48"},
           {"conv2d_winograd.cpu", "conv2d_winograd:N=1,C=64,H=56,W=56,O=64,pad=1,tile=4,block=16,in_block=16"},
           {"conv2d_winograd.cpu", "conv2d_winograd:N=1,C=256,H=14,W=14,O=256,pad=1,tile=2,block=16,in_block=16"}}) {
    const target::MachineTraits machine = machine_traits(target);
    const Template& t = find_template(name);
    ASSERT_TRUE(t.default_config) << name;
    Workload w = parse_workload(key);
    int64_t d = t.default_config(w, machine);
    ASSERT_GE(d, 0) << key << " for " << target;
    std::vector<schedule::LoweredFunc> tuned = lower_candidate(t, w, t.space(w).get(d), machine);
    graph::NodeId node = -1;
    graph::Graph g = workload_graph(w, &node);
    graph::LoweredGroup plain = graph::lower_group(g, {node}, "candidate", {}, {}, machine);
    ASSERT_EQ(tuned.size(), 1u);
    EXPECT_EQ(ir::to_string(tuned[0].body), ir::to_string(plain.func.body)) << key << " for " << target;
  }
  EXPECT_FALSE(find_template("matmul.cpu").default_config) << "bench/gemm's schedule is not the compiler's default";
}

// A row whose width has no divisor up to 8 (a prime: Inception-V3's 17, SqueezeNet's 13)
// is one register tile where the registers hold it, with as many channel blocks as fit,
// not a pixel a tile (1 to 3 accumulators); strided too. One channel block: a column of
// the rows instead, as before. A longer row (SqueezeNet 1.0's 109) in tiles of 4 to 8
// pixels, the last one partial.
TEST(Templates, ARowWithoutSmallDivisorsIsOneRegisterTile) {
  cpu::register_graph_backend();
  const target::MachineTraits machine = machine_traits("cpu");
  const int64_t vectors = (16 + machine.lanes(32) - 1) / machine.lanes(32);  // per 16-channel block
  const int64_t budget = machine.vector_registers * 3 / 4 / vectors;
  const Template& t = find_template("conv2d_nchwc.cpu");
  struct Case {
    std::string key;
    int64_t ow;
    bool row;
  };
  for (const Case& k : {Case{"conv2d:N=1,C=64,H=13,W=13,O=256,KH=3,KW=3,stride=1,pad=1,block=16,in_block=16", 13, true},
                        Case{"conv2d:N=1,C=288,H=35,W=35,O=384,KH=3,KW=3,stride=2,pad=0,block=16,in_block=16", 17, true},
                        Case{"conv2d:N=1,C=48,H=13,W=13,O=16,KH=1,KW=1,stride=1,pad=0,block=16,in_block=16", 13, false},
                        Case{"conv2d:N=1,C=3,H=224,W=224,O=96,KH=7,KW=7,stride=2,pad=0,block=16", 109, true}}) {
    Workload w = parse_workload(k.key);
    int64_t d = t.default_config(w, machine);
    ASSERT_GE(d, 0) << k.key << ": the default is in the space";
    ConfigSpace space = t.space(w);
    Config c = space.get(d);
    int64_t acc = c.factor("tile_oc") * c.factor("tile_ow") * c.factor("tile_oh");
    EXPECT_LE(acc, budget) << k.key;
    if (k.ow > budget) {
      // A longer row: tiles of 4 to 8 pixels, the last one partial, where the registers
      // hold that many.
      if (budget / c.factor("tile_oc") >= 4) {
        EXPECT_GE(c.factor("tile_ow"), 4) << k.key;
        EXPECT_NE(k.ow % c.factor("tile_ow"), 0) << k.key;
      } else {
        EXPECT_EQ(c.factor("tile_ow"), 1) << k.key << ": no row fits " << budget << " accumulators";
      }
      continue;
    }
    EXPECT_GE(acc, k.ow) << k.key;
    EXPECT_EQ(c.factor(k.row ? "tile_ow" : "tile_oh"), k.ow) << k.key;
  }
}

}  // namespace
}  // namespace kiln::tuner
