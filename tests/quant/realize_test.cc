// quantize_realize: a QDQ graph (conv + relu, conv, residual add + relu, max pool)
// becomes the integer form of the contract in docs/models.md, node by node, and
// computes what the QDQ graph computes in float, to within one output step.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend-cpu/graph_backend.h"
#include "compiler/graph/passes/passes.h"
#include "tests/e2e/test_util.h"

namespace kiln::graph {
namespace {

using ir::DataType;

ConstData int8_weight(std::vector<int64_t> shape, uint32_t seed) {
  auto b = std::make_shared<interp::HostBuffer>(DataType::Int(8), shape);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < b->size(); ++i) b->set_int(i, std::uniform_int_distribution<int>(-127, 127)(rng));
  return b;
}

ConstData floats(std::vector<int64_t> shape, uint32_t seed, float scale) {
  auto v = test::random_floats(std::max<int64_t>(1, TensorType{DataType::Float(32), shape}.size()), seed, -scale, scale);
  auto b = std::make_shared<interp::HostBuffer>(DataType::Float(32), shape);
  for (int64_t i = 0; i < b->size(); ++i) b->set(i, v[i]);
  return b;
}

struct Scales {
  double x, w1, y1, w2, y2, out;
};

// x -> Q -> DQ -> conv(3x3) + bias -> relu -> Q -> DQ -> conv + bias -> Q -> DQ;
// add(that, x) -> relu -> Q -> DQ -> max_pool -> Q -> DQ -> output.
Graph qdq_graph(const Scales& s) {
  Graph g;
  auto q = [&](NodeId v, double scale, const std::string& n) {
    NodeId sc = g.add_scalar(n + ".scale", DataType::Float(32), scale);
    NodeId zp = g.add_scalar(n + ".zero", DataType::Int(8), 0);
    NodeId qv = g.add_op("quantize_linear", {v, sc, zp}, {{"axis", int64_t{1}}}, n + ".q");
    return std::pair{qv, g.add_op("dequantize_linear", {qv, sc, zp}, {{"axis", int64_t{1}}}, n + ".dq")};
  };
  auto weight = [&](double scale, uint32_t seed, const std::string& n) {
    NodeId w = g.add_constant(n, int8_weight({16, 16, 3, 3}, seed));
    NodeId sc = g.add_scalar(n + ".scale", DataType::Float(32), scale);
    NodeId zp = g.add_scalar(n + ".zero", DataType::Int(8), 0);
    return g.add_op("dequantize_linear", {w, sc, zp}, {{"axis", int64_t{0}}}, n + ".dq");
  };
  Attrs conv{{"strides", std::vector<int64_t>{1, 1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
             {"dilations", std::vector<int64_t>{1, 1}}, {"groups", int64_t{1}}};
  NodeId x = g.add_input("x", TensorType{DataType::Float(32), {1, 16, 8, 8}});
  auto [xq, xd] = q(x, s.x, "x");
  NodeId c1 = g.add_op("conv2d", {xd, weight(s.w1, 1, "w1")}, conv, "conv1");
  NodeId a1 = g.add_op("add", {c1, g.add_constant("b1", floats({16, 1, 1}, 2, 0.5f))}, {}, "bias1");
  auto [y1q, y1d] = q(g.add_op("relu", {a1}, {}, "relu1"), s.y1, "y1");
  NodeId c2 = g.add_op("conv2d", {y1d, weight(s.w2, 3, "w2")}, conv, "conv2");
  NodeId a2 = g.add_op("add", {c2, g.add_constant("b2", floats({16, 1, 1}, 4, 0.5f))}, {}, "bias2");
  auto [y2q, y2d] = q(a2, s.y2, "y2");
  NodeId sum = g.add_op("relu", {g.add_op("add", {y2d, xd}, {}, "residual")}, {}, "relu2");
  auto [rq, rd] = q(sum, s.out, "res");
  NodeId pool = g.add_op("max_pool2d", {rd},
                         {{"kernel", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
                          {"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"dilations", std::vector<int64_t>{1, 1}}},
                         "pool");
  auto [pq, pd] = q(pool, s.out, "pool");
  (void)xq, (void)y1q, (void)y2q, (void)rq, (void)pq;
  g.add_output(pd, "y");
  return g;
}

const Node* find(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes())
    if (n.name == name) return &n;
  return nullptr;
}

class QuantizeRealize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_F(QuantizeRealize, PowerOfTwoScalesGiveTheShiftForm) {
  Scales s{1.0 / 16, 1.0 / 256, 1.0 / 16, 1.0 / 512, 1.0 / 8, 1.0 / 8};
  Graph r = quantize_realize(qdq_graph(s));
  // y1 = cast(clip(right_shift(add(conv2d(xq, w1q) {int32}, bias), k), 0, 127)), k = 4 - (4 + 8) ... as exponents:
  // s_x * s_w / s_y = 2^-4 * 2^-8 / 2^-4 = 2^-8: k = 8.
  const Node* y1 = find(r, "y1.q");
  ASSERT_NE(y1, nullptr) << r;
  EXPECT_EQ(y1->op, "cast");
  EXPECT_EQ(y1->attrs.get_string("dtype"), "int8");
  const Node& clip = r.node(y1->inputs[0]);
  ASSERT_EQ(clip.op, "clip");
  EXPECT_EQ(clip.attrs.get_float("min"), 0.0);  // the ReLU folded
  EXPECT_EQ(clip.attrs.get_float("max"), 127.0);
  const Node& shift = r.node(clip.inputs[0]);
  ASSERT_EQ(shift.op, "right_shift");
  const Node& k = r.node(shift.inputs[1]);
  ASSERT_TRUE(k.is_constant());
  EXPECT_EQ(k.type, (TensorType{DataType::Int(32), {}}));
  EXPECT_EQ(constant_ints(k), std::vector<int64_t>{8});
  const Node& biased = r.node(shift.inputs[0]);
  ASSERT_EQ(biased.op, "add");
  const Node& bias = r.node(biased.inputs[1]);
  ASSERT_TRUE(bias.is_constant());
  EXPECT_EQ(bias.type, (TensorType{DataType::Int(32), {1, 16, 1, 1}}));
  // The bias in units of s_x * s_w = 2^-12, plus the rounding term 2^7.
  ConstData b1 = floats({16, 1, 1}, 2, 0.5f);
  for (int c = 0; c < 16; ++c) EXPECT_EQ(bias.value->get_int(c), std::nearbyint(b1->get(c) * 4096) + 128) << c;
  const Node& conv = r.node(biased.inputs[0]);
  ASSERT_EQ(conv.op, "conv2d");
  EXPECT_EQ(conv.attrs.get_string("out_dtype"), "int32");
  EXPECT_EQ(conv.type.dtype, DataType::Int(32));
  EXPECT_EQ(r.type(conv.inputs[0]).dtype, DataType::Int(8));
  EXPECT_TRUE(r.node(conv.inputs[1]).is_constant());
  EXPECT_EQ(r.type(conv.inputs[1]).dtype, DataType::Int(8));
  EXPECT_EQ(r.node(conv.inputs[0]).op, "quantize_linear");  // the graph's first quantize

  // y2: no ReLU (min -128); 2^-4 * 2^-9 / 2^-3 = 2^-10.
  const Node* y2 = find(r, "y2.q");
  ASSERT_NE(y2, nullptr);
  const Node& clip2 = r.node(y2->inputs[0]);
  EXPECT_EQ(clip2.attrs.get_float("min"), -128.0);
  EXPECT_EQ(constant_ints(r.node(r.node(clip2.inputs[0]).inputs[1])), std::vector<int64_t>{10});

  // The residual: y2 (2^-3) and x (2^-4) to the common 2^-4, added, shifted by 1 to 2^-3.
  const Node* res = find(r, "res.q");
  ASSERT_NE(res, nullptr);
  const Node& rclip = r.node(res->inputs[0]);
  EXPECT_EQ(rclip.attrs.get_float("min"), 0.0);
  const Node& rshift = r.node(rclip.inputs[0]);
  ASSERT_EQ(rshift.op, "right_shift");
  EXPECT_EQ(constant_ints(r.node(rshift.inputs[1])), std::vector<int64_t>{1});
  const Node& rounded = r.node(rshift.inputs[0]);
  ASSERT_EQ(rounded.op, "add");
  EXPECT_EQ(constant_ints(r.node(rounded.inputs[1])), std::vector<int64_t>{1});
  const Node& sum = r.node(rounded.inputs[0]);
  ASSERT_EQ(sum.op, "add");
  const Node& a = r.node(sum.inputs[0]);
  ASSERT_EQ(a.op, "left_shift");  // y2 at 2^-3 goes to 2^-4
  EXPECT_EQ(r.node(a.inputs[0]).op, "cast");
  EXPECT_EQ(r.node(r.node(a.inputs[0]).inputs[0]).name, "y2.q");
  EXPECT_EQ(r.node(sum.inputs[1]).op, "cast");  // x is at 2^-4 already: no shift

  // The max pool runs on int8.
  const Node* pool = find(r, "pool.q");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->op, "max_pool2d");
  EXPECT_EQ(pool->type.dtype, DataType::Int(8));
  EXPECT_EQ(r.node(pool->inputs[0]).name, "res.q");

  // No float convolution is left.
  for (const Node& n : r.nodes())
    if (n.op == "conv2d") {
      EXPECT_EQ(n.type.dtype, DataType::Int(32));
    }
}

// The realized graph against the QDQ graph run as written (float arithmetic with
// fake quantization): within one output step everywhere (the shift form rounds ties
// up where quantize_linear rounds them to even, and with power-of-two scales ties are
// common), and a mean difference under half a step.
void expect_close(const Scales& s) {
  Graph g = qdq_graph(s);
  auto x = test::random_floats(16 * 64, 7, -4, 4);
  auto want = test::run_graph(g, {x}, "interp", {false, false});
  auto got = test::run_graph(g, {x}, "cpu");
  ASSERT_EQ(got.size(), want.size());
  double total = 0;
  int nonzero = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], s.out * 1.01) << i;
    total += std::fabs(got[i] - want[i]);
    nonzero += want[i] != 0;
  }
  EXPECT_LT(total / static_cast<double>(got.size()), 0.5 * s.out);
  EXPECT_GT(nonzero, static_cast<int>(got.size()) / 4) << "the test data should not clip to zero";
}

TEST_F(QuantizeRealize, PowerOfTwoMatchesTheQdqGraph) { expect_close({1.0 / 16, 1.0 / 256, 1.0 / 16, 1.0 / 512, 1.0 / 8, 1.0 / 8}); }

TEST_F(QuantizeRealize, FloatScalesStayOnTheCpuPath) {
  Scales s{0.05, 0.003, 0.07, 0.002, 0.11, 0.13};
  Graph r = quantize_realize(qdq_graph(s));
  int int_convs = 0;
  for (const Node& n : r.nodes()) {
    EXPECT_NE(n.op, "right_shift");
    if (n.op == "conv2d") {
      EXPECT_EQ(n.attrs.get_string("out_dtype"), "int32");
      EXPECT_EQ(r.type(n.inputs[0]).dtype, DataType::Int(8));
      int_convs++;
    }
  }
  EXPECT_EQ(int_convs, 2);
  expect_close(s);
}

TEST_F(QuantizeRealize, OptimizeRunsItFirst) {
  Graph o = optimize(qdq_graph({1.0 / 16, 1.0 / 256, 1.0 / 16, 1.0 / 512, 1.0 / 8, 1.0 / 8}));
  int shifts = 0;
  for (const Node& n : o.nodes()) shifts += n.op == "right_shift";
  EXPECT_EQ(shifts, 3);
}

}  // namespace
}  // namespace kiln::graph
