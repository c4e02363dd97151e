// The CPU's default convolutions in NCHWc (AlterLayout's conv2d_nchwc, carried between
// operators by CarryLayout, scheduled by graph::schedule_conv2d_nchwc from the target's
// registers, their bias, activation or residual add computed from the register tile):
// a MobileNet/ResNet mix of regular, 1x1, strided and depthwise convolutions, channel
// blocks of 16 and 8, pooling, on the host and on narrower targets (AVX2's 16
// registers, SSE), against the reference interpreter on the unoptimized graph.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "compiler/ir/printer.h"
#include "compiler/target/backend.h"
#include "tests/cpu/kernel_test_util.h"

namespace kiln::graph {
namespace {

const ir::DataType f32 = ir::DataType::Float(32);

using test_util::random_constant;

struct Net {
  int64_t batch, in_channels, h, w, width, narrow;  // width: 16-blocked channels; narrow: 8-blocked
};

// conv 3x3 /2 + bias + relu6 -> depthwise 3x3 + bias + relu6 -> 1x1 to `narrow` + bias
// -> 1x1 back to `width` + relu, + the first conv's result (residual) -> depthwise 3x3
// /2 (no padding on one side: pads [0, 0, 1, 1]) -> conv 3x3 to `narrow` + relu ->
// max pool 2x2 -> global average pool.
Graph net(const Net& n) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {n.batch, n.in_channels, n.h, n.w}});
  uint32_t seed = 10;
  auto conv = [&](NodeId t, int64_t out, int64_t in, int64_t k, std::vector<int64_t> pads, int64_t stride, int64_t groups = 1) {
    Attrs a{{"pads", pads}, {"strides", std::vector<int64_t>{stride, stride}}};
    if (groups > 1) a.set("groups", groups);
    NodeId c = g.add_op("conv2d", {t, g.add_constant("w", random_constant({out, in / groups, k, k}, seed++))}, a);
    return g.add_op("add", {c, g.add_constant("b", random_constant({out, 1, 1}, seed++))});
  };
  auto relu6 = [&](NodeId t) { return g.add_op("clip", {t}, {{"min", 0.0}, {"max", 6.0}}); };
  std::vector<int64_t> same{1, 1, 1, 1};
  NodeId c1 = relu6(conv(x, n.width, n.in_channels, 3, same, 2));
  NodeId d1 = relu6(conv(c1, n.width, n.width, 3, same, 1, n.width));
  NodeId p1 = conv(d1, n.narrow, n.width, 1, {0, 0, 0, 0}, 1);
  NodeId e1 = g.add_op("relu", {conv(p1, n.width, n.narrow, 1, {0, 0, 0, 0}, 1)});
  NodeId r = g.add_op("add", {e1, c1});
  NodeId d2 = conv(r, n.width, n.width, 3, {0, 0, 1, 1}, 2, n.width);
  NodeId c3 = g.add_op("relu", {conv(d2, n.narrow, n.width, 3, same, 1)});
  NodeId mp = g.add_op("max_pool2d", {c3}, {{"kernel", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  g.add_output(g.add_op("global_avg_pool2d", {mp}), "y");
  g.add_output(mp, "pooled");
  return g;
}

class ConvKernels : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_P(ConvKernels, MatchTheInterpreter) {
  const std::string target = GetParam();
  for (Net n : {Net{1, 3, 20, 18, 32, 16}, Net{2, 3, 15, 13, 48, 24}, Net{1, 8, 28, 28, 16, 8}}) {
    Graph g = net(n);
    auto x = test::random_floats(n.batch * n.in_channels * n.h * n.w, 3);
    std::string what = ::testing::PrintToString(std::vector<int64_t>{n.batch, n.in_channels, n.h, n.w, n.width, n.narrow}) + " on " + target;
    for (size_t out : {0, 1}) {
      CompiledModel m;
      std::vector<float> got = test_util::run_graph(g, x, "cpu", target, out, &m);
      int blocked = 0;
      for (const auto& node : m.graph.nodes()) blocked += node.op == "conv2d_nchwc" && node.type.ndim() == 5;
      EXPECT_EQ(blocked, 6) << "every convolution hands on NCHWc: " << what;
      EXPECT_LT(test::rel_error(got, test_util::run_graph(g, x, "interp", "", out)), 1e-5) << what << " output " << out;
    }
  }
}

// Many channel blocks, each block's weight read by every tile of its rows: each step of
// the channel reduction fetches a line of the next block's weight, never outside the
// weight (the last block fetches its own), at an address without divisions; 1x1 and
// strided 3x3 convolutions, the results those of the interpreter.
TEST_P(ConvKernels, ABlockFetchesTheNextBlocksWeight) {
  const std::string target = GetParam();
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 64, 9, 9}});
  NodeId c1 = g.add_op("conv2d", {x, g.add_constant("w1", random_constant({256, 64, 1, 1}, 5))},
                       {{"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"strides", std::vector<int64_t>{1, 1}}});
  NodeId c15 = g.add_op("conv2d", {g.add_op("relu", {c1}), g.add_constant("w15", random_constant({256, 256, 1, 1}, 7))},
                        {{"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"strides", std::vector<int64_t>{1, 1}}});
  NodeId c2 = g.add_op("conv2d", {g.add_op("relu", {c15}), g.add_constant("w2", random_constant({256, 256, 3, 3}, 6))},
                       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}});  // not Winograd
  g.add_output(c2, "y");
  auto in = test::random_floats(64 * 9 * 9, 3);
  CompiledModel m;
  std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
  int fetching = 0;
  for (const auto& k : m.kernels) {
    test_util::PrefetchReach r = test_util::prefetch_reach(k.func);
    if (r.count == 0) continue;
    fetching++;
    EXPECT_GE(r.lowest, 0) << k.func.name;
    EXPECT_GT(r.size, 0) << k.func.name << ": the prefetch reads a kernel argument";
    EXPECT_LT(r.highest, r.size) << k.func.name;
    EXPECT_EQ(r.divisions, 0) << k.func.name << ": a prefetch's address is its line's offset, not one index per dimension";
  }
  EXPECT_EQ(fetching, 2) << "the two convolutions on NCHWc data (the first reads NCHW) on " << target;
  EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << target;
}

// Where a depthwise convolution's one user is a 1x1 convolution, one kernel computes
// both: the depthwise rows of each pointwise row tile go to a buffer inside the parallel
// loop (a few rows, not the whole tensor) when the pointwise output is one tile group or
// has enough row tiles to go outermost, else the depthwise result is computed whole
// first; stride 1 and 2, with and without a residual add, against the interpreter.
TEST_P(ConvKernels, ADepthwiseConvolutionFeedsThePointwiseRowTiles) {
  const std::string target = GetParam();
  const target::MachineTraits machine = target::make_backend("cpu")->traits(target);
  struct Case {
    int64_t channels, expanded, out, stride, hw;
  };
  for (Case c : {Case{32, 96, 32, 1, 14}, Case{32, 96, 24, 2, 15}, Case{16, 96, 64, 1, 7}, Case{16, 96, 64, 1, 16}}) {
    Graph g;
    uint32_t seed = 40;
    NodeId x = g.add_input("x", {f32, {1, c.channels, c.hw, c.hw}});
    auto conv = [&](NodeId t, int64_t out, int64_t in, int64_t k, int64_t stride, int64_t groups) {
      Attrs a{{"pads", std::vector<int64_t>(4, k / 2)}, {"strides", std::vector<int64_t>{stride, stride}}};
      if (groups > 1) a.set("groups", groups);
      NodeId y = g.add_op("conv2d", {t, g.add_constant("w", random_constant({out, in / groups, k, k}, seed++))}, a);
      return g.add_op("add", {y, g.add_constant("b", random_constant({out, 1, 1}, seed++))});
    };
    auto relu6 = [&](NodeId t) { return g.add_op("clip", {t}, {{"min", 0.0}, {"max", 6.0}}); };
    NodeId head = conv(x, c.channels, c.channels, 1, 1, 1);  // NCHWc from here on
    NodeId e = relu6(conv(head, c.expanded, c.channels, 1, 1, 1));
    NodeId d = relu6(conv(e, c.expanded, c.expanded, 3, c.stride, c.expanded));
    NodeId p = conv(d, c.out, c.expanded, 1, 1, 1);
    if (c.out == c.channels && c.stride == 1) p = g.add_op("add", {p, head});
    g.add_output(g.add_op("relu", {p}), "y");
    auto in = test::random_floats(c.channels * c.hw * c.hw, 5);
    std::string what = ::testing::PrintToString(std::vector<int64_t>{c.channels, c.expanded, c.out, c.stride, c.hw}) + " on " + target;
    CompiledModel m;
    std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
    EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << what;
    int64_t oh = (c.hw - 1) / c.stride + 1, whole = c.expanded * oh * oh;
    int fused = 0;
    for (const auto& k : m.kernels) {
      test_util::Allocation a = test_util::allocation(k.func, "depthwise_conv2d_nchwc");
      test_util::Allocation mid = test_util::allocation(k.func, "clip");
      if (a.elements == 0 || test_util::allocation(k.func, "conv2d_nchwc").elements == 0) continue;
      fused++;
      ASSERT_GT(mid.elements, 0) << what << ": the depthwise result's buffer in " << k.func.name;
      // With AVX-512 (32 registers of 16 lanes) a tile takes two blocks of 16 channels:
      // 24 and 32 outputs are one tile group; 64 are two, with 16 row tiles at 16x16, so
      // the rows go outermost, and with 7 at 7x7: the depthwise result whole.
      bool avx512 = machine.vector_registers >= 32 && machine.lanes(32) == 16;
      bool by_rows = mid.in_parallel_loop && mid.elements < whole / 2;
      EXPECT_TRUE(by_rows || mid.elements == whole) << what << ": " << mid.elements << " of " << whole;
      if (avx512) {
        EXPECT_EQ(by_rows, c.hw != 7) << what << ": " << mid.elements << " of " << whole;
      }
    }
    EXPECT_EQ(fused, 1) << what << ": the depthwise and pointwise convolutions in one kernel";
  }
}

// A convolution's parallel loop: its row tiles outermost where its data outweighs its
// weight (144 channels from 32 at 16x16: 32 KB of data, 18 KB of weight; the loop is the
// 16 rows); else its channel groups (tiles of output channel blocks), with the rows too
// where the groups are few or split unevenly over two or four threads (144 channels at
// 8x8, 8 KB of data: 3 groups of three blocks of 16, or 9 of one); 256 are 16 blocks, in
// 8 or 16 groups, and their loop at 8x8 is the groups alone.
TEST_P(ConvKernels, ConvolutionsSplitTheirRowsOrTheirChannelGroupsOverThreads) {
  const std::string target = GetParam();
  struct Case {
    int64_t out, hw;
  };
  for (Case c : {Case{144, 16}, Case{144, 8}, Case{256, 8}}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, {1, 32, c.hw, c.hw}});
    Attrs a{{"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"strides", std::vector<int64_t>{1, 1}}};
    NodeId head = g.add_op("relu", {g.add_op("conv2d", {x, g.add_constant("w0", random_constant({32, 32, 1, 1}, 3))}, a)});
    NodeId y = g.add_op("conv2d", {head, g.add_constant("w1", random_constant({c.out, 32, 1, 1}, 4))}, a);
    g.add_output(g.add_op("relu", {y}), "y");
    auto in = test::random_floats(32 * c.hw * c.hw, 5);
    std::string what = fmt::format("{} channels at {}x{} on {}", c.out, c.hw, c.hw, target);
    CompiledModel m;
    std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
    EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << what;
    std::vector<std::string> names;
    for (const auto& k : m.kernels) names.push_back(k.func.name);
    ASSERT_GE(m.kernels.size(), 2u) << what;
    std::vector<int64_t> par = test_util::parallel_extents(m.kernels[1].func);
    ASSERT_NE(names[1].find("conv2d_nchwc"), std::string::npos) << ::testing::PrintToString(names);
    ASSERT_EQ(par.size(), 1u) << what;
    if (c.hw == 16) {
      EXPECT_EQ(par[0], 16) << "the rows, outermost: " << what;
    } else if (c.out == 144) {
      EXPECT_GT(par[0], 9) << "the groups and their rows: " << what;
    } else {
      EXPECT_TRUE(par[0] == 8 || par[0] == 16) << "the groups alone: " << what << ": " << par[0];
    }
  }
}

// A row longer than a register tile with no divisor from 4 to 8 pixels (31 wide on NCHW
// and on NCHWc data, 33 on NCHWc data; the 33-wide first convolution's two blocks by
// three rows fill the registers as they are) is tiled by 8 anyway (6 with AVX2's 8
// lanes), the last tile partial: the full tiles
// in a loop with no guard (loop partitioning leaves the guards to a copy of its own for
// the last tile), the results those of the interpreter.
TEST_P(ConvKernels, ALongRowOfAwkwardWidthEndsInAPartialTile) {
  const std::string target = GetParam();
  const target::MachineTraits machine = target::make_backend("cpu")->traits(target);
  struct Case {
    int64_t h, w;
  };
  for (Case c : {Case{29, 31}, Case{9, 33}}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, {1, 3, c.h, c.w}});
    Attrs same{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{1, 1}}};
    Attrs none{{"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"strides", std::vector<int64_t>{1, 1}}};
    NodeId c1 = g.add_op("relu", {g.add_op("conv2d", {x, g.add_constant("w1", random_constant({32, 3, 3, 3}, 3))}, same)});
    NodeId c2 = g.add_op("conv2d", {c1, g.add_constant("w2", random_constant({48, 32, 1, 1}, 4))}, none);
    g.add_output(g.add_op("add", {c2, g.add_constant("b", random_constant({48, 1, 1}, 5))}), "y");
    auto in = test::random_floats(3 * c.h * c.w, 6);
    std::string what = fmt::format("{}x{} on {}", c.h, c.w, target);
    CompiledModel m;
    std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
    EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << what;
    int partial = 0;
    for (const auto& k : m.kernels) {
      if (k.func.name.find("conv2d_nchwc") == std::string::npos) continue;
      std::string ir = ir::to_string(k.func.body);
      EXPECT_EQ(ir.find("if ("), std::string::npos) << k.func.name << ", " << what << ": no guard left\n" << ir;
      size_t first = ir.find("allocate conv2d_nchwc");
      partial += first != std::string::npos && ir.find("allocate conv2d_nchwc", first + 1) != std::string::npos;
    }
    // Tiles of 8 or 6 pixels where the vectors have 16 or 8 lanes (SSE's 4-lane ones
    // leave the registers 3 pixels of a 16-channel block, too few for partial tiles).
    if (machine.lanes(32) >= 8) {
      EXPECT_GE(partial, 1) << what << ": the last tile's loop of its own";
    }
  }
}

// Grouped convolutions (ResNeXt, RegNet) are blocked inside their groups: on NCHW data
// (groups of 16 output channels, 4 inputs each), on NCHWc data in blocks of 16 holding
// two groups of 8 (strided), groups of 4 in blocks of 4 added to a 16-blocked tensor;
// groups of 2 channels stay a plain convolution. Results those of the interpreter.
TEST_P(ConvKernels, GroupedConvolutionsAreBlockedInsideTheirGroups) {
  const std::string target = GetParam();
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 8, 12, 12}});
  uint32_t seed = 70;
  auto conv = [&](NodeId t, int64_t out, int64_t in, int64_t k, int64_t stride, int64_t groups) {
    Attrs a{{"pads", std::vector<int64_t>(4, k / 2)}, {"strides", std::vector<int64_t>{stride, stride}}};
    if (groups > 1) a.set("groups", groups);
    NodeId c = g.add_op("conv2d", {t, g.add_constant("w", random_constant({out, in / groups, k, k}, seed++))}, a);
    return g.add_op("add", {c, g.add_constant("b", random_constant({out, 1, 1}, seed++))});
  };
  NodeId g1 = g.add_op("relu", {conv(x, 32, 8, 3, 1, 2)});
  NodeId g2 = g.add_op("relu", {conv(g1, 32, 32, 3, 2, 4)});
  NodeId p = conv(g2, 64, 32, 1, 1, 1);
  NodeId g3 = g.add_op("relu", {g.add_op("add", {conv(p, 64, 64, 3, 1, 16), p})});
  g.add_output(conv(g3, 64, 64, 3, 1, 32), "y");
  auto in = test::random_floats(8 * 12 * 12, 3);
  CompiledModel m;
  std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
  std::vector<int64_t> blocks;
  int plain = 0;
  for (const auto& node : m.graph.nodes()) {
    if (node.op == "conv2d_nchwc" && node.attrs.get_int("groups", 1) > 1)
      blocks.push_back(m.graph.type(node.inputs[1]).shape.back());
    plain += node.op == "conv2d" && node.attrs.get_int("groups", 1) == 32;
  }
  EXPECT_EQ(blocks, (std::vector<int64_t>{16, 8, 4})) << target;
  EXPECT_EQ(plain, 1) << "groups of 2 channels: " << target;
  EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << target;
}

// Pooling windows of NCHWc data (Inception's 3x3 average pools at stride 1, ResNet's
// 3x3 max pool at stride 2): the window's taps unrolled around the vector, and an
// average's sum computed inside the average's loops, a vector of sums in registers,
// not a buffer of the whole tensor written in a pass of its own. Both divisors (the
// padding counted or not), results those of the interpreter.
TEST_P(ConvKernels, PoolingWindowsAreUnrolledAndSumsStayInRegisters) {
  const std::string target = GetParam();
  const int64_t lanes = target::make_backend("cpu")->traits(target).lanes(32);
  for (int64_t include_pad : {0, 1}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, {1, 3, 15, 17}});
    Attrs same{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{1, 1}}};
    NodeId c = g.add_op("relu", {g.add_op("conv2d", {x, g.add_constant("w", random_constant({32, 3, 3, 3}, 81))}, same)});
    Attrs window{{"kernel", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    Attrs avg = window, max = window;
    avg.set("strides", std::vector<int64_t>{1, 1});
    avg.set("count_include_pad", include_pad);
    max.set("strides", std::vector<int64_t>{2, 2});
    NodeId a = g.add_op("avg_pool2d", {c}, avg);
    g.add_output(g.add_op("relu", {g.add_op("add", {a, c})}), "y");
    g.add_output(g.add_op("max_pool2d", {c}, max), "m");
    auto in = test::random_floats(3 * 15 * 17, 82);
    const std::string what = fmt::format("count_include_pad={} on {}", include_pad, target);
    CompiledModel m;
    for (size_t out : {0, 1}) {
      std::vector<float> got = test_util::run_graph(g, in, "cpu", target, out, &m);
      EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "", out)), 1e-5) << what << ", output " << out;
    }
    int pools = 0;
    for (const auto& k : m.kernels) {
      const std::string ir = ir::to_string(k.func.body);
      if (ir.find("pool2d") == std::string::npos) continue;
      ++pools;
      EXPECT_EQ(ir.find("for (ry"), std::string::npos) << k.func.name << ", " << what << ": the window unrolled\n" << ir;
      EXPECT_EQ(ir.find("for (rx"), std::string::npos) << k.func.name << ", " << what << ": the window unrolled\n" << ir;
      if (ir.find("avg_pool2d.sum") == std::string::npos) continue;
      test_util::Allocation sum = test_util::allocation(k.func, "avg_pool2d.sum");
      EXPECT_TRUE(sum.in_parallel_loop) << what << "\n" << ir;
      EXPECT_GE(sum.elements, 1) << what << "\n" << ir;
      EXPECT_LE(sum.elements, std::max<int64_t>(lanes, 16)) << what << ": a vector of sums\n" << ir;
    }
    EXPECT_EQ(pools, 2) << what;
  }
}

// Borders apart from interiors (loop partitioning on `likely` tests): the padded copy of
// a first convolution's NCHW image loads a row's interior as vectors (they were gathers
// of clamped indices), a depthwise convolution on a 56-row image or more loads its
// interior without the padding's selects, and a concatenation in NCHWc is one copy loop
// per operand. Results those of the interpreter; each fails on the code before the
// change.
TEST_P(ConvKernels, BordersAndConcatenationsSplitApartFromTheInterior) {
  const std::string target = GetParam();
  Graph g;
  uint32_t seed = 90;
  NodeId x = g.add_input("x", {f32, {1, 3, 60, 60}});
  auto conv = [&](NodeId t, int64_t out, int64_t in, int64_t k, int64_t groups) {
    Attrs a{{"pads", std::vector<int64_t>(4, k / 2)}, {"strides", std::vector<int64_t>{1, 1}}};
    if (groups > 1) a.set("groups", groups);
    NodeId y = g.add_op("conv2d", {t, g.add_constant("w", random_constant({out, in / groups, k, k}, seed++))}, a);
    return g.add_op("relu", {y});
  };
  NodeId c = conv(x, 32, 3, 3, 1);
  NodeId d = conv(c, 32, 32, 3, 32);
  NodeId cat = g.add_op("concatenate", {conv(d, 16, 32, 1, 1), conv(d, 32, 32, 1, 1), conv(c, 16, 32, 1, 1)}, {{"axis", int64_t{1}}});
  // Two readers (as Inception's): the concatenation a kernel of its own.
  g.add_output(g.add_op("max_pool2d", {cat}, {{"kernel", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}), "y");
  g.add_output(conv(cat, 16, 64, 1, 1), "z");
  auto in = test::random_floats(3 * 60 * 60, 91);
  CompiledModel m;
  for (size_t out : {0, 1}) {
    std::vector<float> got = test_util::run_graph(g, in, "cpu", target, out, &m);
    EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "", out)), 1e-5) << target << ", output " << out;
  }
  const std::regex plain_filter(R"(depthwise_conv2d_nchwc\[ramp\([^\]]*\)\] \+ p0\[ramp\()");
  int pads = 0, filters = 0, concats = 0;
  for (const auto& k : m.kernels) {
    const std::string ir = ir::to_string(k.func.body);
    if (ir.find("allocate pad") != std::string::npos) {
      ++pads;
      EXPECT_EQ(ir.find("min(ramp("), std::string::npos) << target << ": the image's rows loaded as vectors, no gathers\n" << ir;
    }
    if (std::regex_search(ir, plain_filter)) ++filters;
    if (ir.find("concatenate[") != std::string::npos) {
      ++concats;
      EXPECT_EQ(ir.find("select("), std::string::npos) << target << ": one copy loop per operand\n" << ir;
    }
  }
  EXPECT_EQ(pads, 1) << target << ": the image's padded copy";
  EXPECT_EQ(filters, 1) << target << ": the depthwise filter's interior without selects";
  EXPECT_EQ(concats, 1) << target;
}

// 3-d convolutions (video models) are 2-d convolutions per kernel tap in depth over the
// frames as a batch: a 3x3x3 one padded in depth, a temporal 3x1x1 one strided and
// dilated in depth, a spatial 1x3x3 one strided in height and width with two groups,
// two clips; every one blocked, none left a 3-d loop nest; a batch-norm scale after
// one folded into its weight. Results those of the interpreter.
TEST_P(ConvKernels, ThreeDConvolutionsAreTwoDConvolutionsPerTap) {
  const std::string target = GetParam();
  Graph g;
  NodeId x = g.add_input("x", {f32, {2, 4, 7, 10, 9}});
  uint32_t seed = 90;
  // conv3d, then (scale, shift): a batch norm's form after simplify_inference, or the bias.
  auto conv = [&](NodeId t, int64_t out, int64_t in, std::vector<int64_t> k, std::vector<int64_t> pads, std::vector<int64_t> strides,
                  std::vector<int64_t> dilations, int64_t groups, bool scaled) {
    Attrs a{{"pads", pads}, {"strides", strides}, {"dilations", dilations}, {"groups", groups}};
    NodeId c = g.add_op("conv3d", {t, g.add_constant("w", random_constant({out, in / groups, k[0], k[1], k[2]}, seed++))}, a);
    if (scaled) c = g.add_op("multiply", {c, g.add_constant("s", random_constant({out, 1, 1, 1}, seed++))});
    return g.add_op("add", {c, g.add_constant("b", random_constant({out, 1, 1, 1}, seed++))});
  };
  NodeId c1 = g.add_op("relu", {conv(x, 16, 4, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, false)});
  NodeId c2 = g.add_op("relu", {conv(c1, 24, 16, {3, 1, 1}, {1, 0, 0, 1, 0, 0}, {2, 1, 1}, {2, 1, 1}, 1, true)});
  g.add_output(conv(c2, 32, 24, {1, 3, 3}, {0, 1, 1, 0, 1, 1}, {1, 2, 2}, {1, 1, 1}, 2, false), "y");
  auto in = test::random_floats(2 * 4 * 7 * 10 * 9, 3);
  CompiledModel m;
  std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
  int conv3d = 0, blocked = 0, scales = 0;
  for (const auto& node : m.graph.nodes()) {
    conv3d += node.op == "conv3d";
    blocked += node.op == "conv2d_nchwc" || node.op == "conv2d_winograd";
    scales += node.op == "multiply";
  }
  EXPECT_EQ(conv3d, 0) << target;
  EXPECT_EQ(blocked, 3 + 3 + 1) << "one a tap: " << target;
  EXPECT_EQ(scales, 0) << "the scale is in the weight: " << target;
  EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << target;
}

INSTANTIATE_TEST_SUITE_P(Targets, ConvKernels, ::testing::ValuesIn(test_util::kKernelTargets), test_util::kernel_target_name);

// A register tile leaves registers for the step's operands beside its accumulators (the
// tile's weight vectors and a broadcast of the input a pixel): three 16-channel blocks
// take 7 pixels of a 56-wide row with AVX-512's 32 registers, where 8 (24 accumulators,
// 35 registers in all) spilled; AVX2's 16 keep one block by 4 pixels (its tiles keep at
// least 12 accumulators' worth of pixels before the row's divisor). Compiled only: the
// tile is the compiler's choice for the target, whatever runs the test.
TEST(ConvTiles, ATileLeavesRegistersForItsOperands) {
  cpu::register_graph_backend();
  struct Case {
    std::string target;
    int64_t accumulator_floats;
  };
  for (const Case& c : {Case{"llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512", 3 * 7 * 16},
                        Case{"llvm -mtriple=x86_64-linux-gnu -mcpu=haswell", 1 * 4 * 16}}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, {1, 16, 56, 56}});
    Attrs none{{"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"strides", std::vector<int64_t>{1, 1}}};
    NodeId y = g.add_op("conv2d", {x, g.add_constant("w", random_constant({48, 16, 1, 1}, 1))}, none);
    g.add_output(g.add_op("add", {y, g.add_constant("b", random_constant({48, 1, 1}, 2))}), "y");
    CompileOptions o;
    o.target = target::Target::parse(c.target);
    CompiledModel m = compile(g, o);
    int convs = 0;
    for (const auto& k : m.kernels) {
      std::string ir = ir::to_string(k.func.body);
      size_t at = ir.find("allocate conv2d_nchwc: float32[");
      if (at == std::string::npos) continue;
      ++convs;
      EXPECT_EQ(std::stoll(ir.substr(at + std::string("allocate conv2d_nchwc: float32[").size())), c.accumulator_floats)
          << c.target << "\n" << ir;
    }
    EXPECT_EQ(convs, 1) << c.target;
  }
}

}  // namespace
}  // namespace kiln::graph
