// Winograd convolutions on the CPU (conv2d_winograd, placed by the winograd_conv pass):
// the operator against the direct convolution on the reference interpreter, with tiles
// of 2 and 4, whole and partial tiles, asymmetric padding, channel blocks of 16 and 8,
// on the host and on narrower targets (AVX2's 16 registers, SSE); and the pass, which
// takes the 3x3 stride-1 convolutions of blocked data on images of 14x14 or more and
// leaves the others direct, in a small residual network against the interpreter; and the
// default schedule, a row of image tiles at a time where the weight fits in half of L2.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "compiler/graph/lower_group.h"
#include "compiler/graph/winograd.h"
#include "compiler/ir/printer.h"
#include "compiler/target/backend.h"
#include "tests/cpu/kernel_test_util.h"

namespace kiln::graph {
namespace {

const ir::DataType f32 = ir::DataType::Float(32);

using test_util::run_graph;
using test_util::random_constant;

struct Case {
  int64_t batch, channels, h, w, out, in_block;
  std::vector<int64_t> pads;
  int tile;
};

class Winograd : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_P(Winograd, OperatorMatchesTheDirectConvolution) {
  const std::string target = GetParam();
  for (const Case& c : {Case{1, 16, 16, 16, 32, 16, {1, 1, 1, 1}, 4}, Case{2, 16, 15, 13, 16, 16, {1, 1, 1, 1}, 4},
                        Case{1, 32, 14, 14, 16, 16, {0, 1, 2, 1}, 2}, Case{1, 8, 9, 11, 16, 8, {1, 1, 1, 1}, 2}}) {
    std::string what = ::testing::PrintToString(std::vector<int64_t>{c.batch, c.channels, c.h, c.w, c.out, c.tile}) + " on " + target;
    ConstData w = random_constant({c.out, c.channels, 3, 3}, 7);
    // The reference: conv2d on NCHW data, its result blocked as conv2d_winograd's.
    Graph ref;
    NodeId rx = ref.add_input("x", {f32, {c.batch, c.channels, c.h, c.w}});
    NodeId conv = ref.add_op("conv2d", {rx, ref.add_constant("w", w)}, {{"pads", c.pads}});
    ref.add_output(ref.add_op("to_nchwc", {conv}, {{"block", int64_t{16}}}), "y");
    Graph g;
    NodeId x = g.add_input("x", {f32, {c.batch, c.channels, c.h, c.w}});
    NodeId xb = g.add_op("to_nchwc", {x}, {{"block", c.in_block}});
    NodeId u = g.add_constant("u", winograd::transform_weight(*w, c.tile));
    g.add_output(g.add_op("conv2d_winograd", {xb, u}, {{"pads", c.pads}, {"block", int64_t{16}}, {"tile", int64_t{c.tile}}}), "y");
    auto in = test::random_floats(c.batch * c.channels * c.h * c.w, 3);
    std::vector<float> want = run_graph(ref, in, "interp", "");
    EXPECT_LT(test::rel_error(run_graph(g, in, "cpu", target), want), 1e-5) << what;
    EXPECT_LT(test::rel_error(run_graph(g, in, "interp", ""), want), 1e-5) << what << " (interpreter)";
  }
}

TEST_P(Winograd, TakesTheLargeStrideOneConvolutions) {
  const std::string target = GetParam();
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 3, 28, 28}});
  uint32_t seed = 20;
  auto conv = [&](NodeId t, int64_t out, int64_t in, int64_t stride) {
    Attrs a{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{stride, stride}}};
    NodeId c = g.add_op("conv2d", {t, g.add_constant("w", random_constant({out, in, 3, 3}, seed++))}, a);
    return g.add_op("add", {c, g.add_constant("b", random_constant({out, 1, 1}, seed++))});
  };
  NodeId c1 = g.add_op("relu", {conv(x, 16, 3, 1)});                      // NCHW data: direct
  NodeId c2 = g.add_op("relu", {conv(c1, 16, 16, 1)});                    // 28x28: tiles of 4
  NodeId c3 = conv(c2, 32, 16, 2);                                        // stride 2: direct
  NodeId c4 = g.add_op("relu", {g.add_op("add", {conv(c3, 32, 32, 1), c3})});  // 14x14: tiles of 2
  NodeId c5 = conv(c4, 32, 32, 2);                                        // stride 2: direct
  NodeId c6 = g.add_op("relu", {conv(c5, 32, 32, 1)});                    // 7x7: direct
  g.add_output(g.add_op("global_avg_pool2d", {c6}), "y");
  g.add_output(c4, "c4");
  auto in = test::random_floats(3 * 28 * 28, 5);
  for (size_t out : {0, 1}) {
    CompiledModel m;
    std::vector<float> got = run_graph(g, in, "cpu", target, out, &m);
    std::multimap<std::string, int64_t> convs;
    for (const auto& n : m.graph.nodes())
      if (n.op == "conv2d_winograd" || n.op == "conv2d_nchwc") convs.emplace(n.op, n.attrs.get_int("tile", 0));
    EXPECT_EQ(convs.count("conv2d_nchwc"), 4u) << target;
    ASSERT_EQ(convs.count("conv2d_winograd"), 2u) << target;
    std::vector<int64_t> tiles;
    for (auto [it, end] = convs.equal_range("conv2d_winograd"); it != end; ++it) tiles.push_back(it->second);
    EXPECT_EQ(tiles, (std::vector<int64_t>{4, 2})) << target;
    EXPECT_LT(test::rel_error(got, run_graph(g, in, "interp", "", out)), 1e-5) << target << " output " << out;
  }
}

// Where the transformed weight fits in half of L2, the default computes a row of image
// tiles at a time (graph::schedule_winograd): the input transform's buffer holds one
// row's tiles, allocated inside the parallel loop; with a smaller L2, all the tiles, and
// the products, slice by slice, fetch the next slice's weight.
TEST(WinogradSchedule, ARowOfTilesAtATimeWhereTheWeightFitsInHalfOfL2) {
  // ResNet-18's first 3x3 convolutions: 56x56x64, tiles of 4, weight 36 x 64 x 64 floats.
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 4, 56, 56, 16}});
  NodeId u = g.add_constant("u", random_constant({36, 64, 64}, 3));
  NodeId y = g.add_op("conv2d_winograd", {x, u}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"block", int64_t{16}}, {"tile", int64_t{4}}});
  NodeId r = g.add_op("relu", {y});
  g.add_output(r, "y");
  auto lowered = [&](int64_t l2) {
    target::MachineTraits m{512, 32, 48 << 10, l2};
    return ir::to_string(lower_group(g, {y, r}, "k", {}, {}, m).func.body);
  };
  auto buffer_of = [](const std::string& ir) {
    size_t at = ir.find("allocate winograd_input: float32[");
    return at == std::string::npos ? std::string("none") : ir.substr(at, ir.find(']', at) - at + 1);
  };
  const std::string rows = lowered(2 << 20), whole = lowered(512 << 10);
  EXPECT_EQ(buffer_of(rows), "allocate winograd_input: float32[32256]");    // 36 x 14 x 64
  EXPECT_EQ(buffer_of(whole), "allocate winograd_input: float32[451584]");  // 36 x 196 x 64
  EXPECT_EQ(rows.find("prefetch"), std::string::npos);
  EXPECT_NE(whole.find("prefetch"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Targets, Winograd, ::testing::ValuesIn(test_util::kKernelTargets), test_util::kernel_target_name);

}  // namespace
}  // namespace kiln::graph
