// Graph passes, each on a small graph: structure after the pass and unchanged results.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/graph/lower_group.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/passes/passes.h"
#include "tests/e2e/test_util.h"

namespace kiln::graph {
namespace {

const DataType f32 = DataType::Float(32);

ConstData const_f32(std::vector<int64_t> shape, uint32_t seed, float lo = -1, float hi = 1) {
  auto b = std::make_shared<interp::HostBuffer>(f32, shape);
  auto v = test::random_floats(b->size(), seed, lo, hi);
  std::memcpy(b->data(), v.data(), v.size() * sizeof(float));
  return b;
}

int count_op(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& x : g.nodes()) n += x.op == op;
  return n;
}

// conv -> batch_norm -> relu, plus a residual add of a second conv's output.
Graph conv_bn_relu_block() {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 4, 6, 6}});
  Attrs pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  NodeId c1 = g.add_op("conv2d", {x, g.add_constant("w1", const_f32({4, 4, 3, 3}, 1))}, pad1, "conv1");
  NodeId bn = g.add_op("batch_norm",
                       {c1, g.add_constant("gamma", const_f32({4}, 2, 0.5, 1.5)), g.add_constant("beta", const_f32({4}, 3)),
                        g.add_constant("mean", const_f32({4}, 4)), g.add_constant("var", const_f32({4}, 5, 0.5, 2))},
                       {{"epsilon", 1e-5}}, "bn1");
  NodeId r = g.add_op("relu", {bn});
  NodeId d = g.add_op("dropout", {r});
  NodeId c2 = g.add_op("conv2d", {d, g.add_constant("w2", const_f32({4, 4, 3, 3}, 6))}, pad1, "conv2");
  NodeId s = g.add_op("add", {c2, x});
  g.add_output(g.add_op("relu", {s}), "y");
  return g;
}

std::vector<float> run(const Graph& g, bool fuse = true) {
  return test::run_graph(g, {test::random_floats(144, 7)}, "interp", {false, fuse});
}

TEST(Passes, SimplifyInferenceRemovesBatchNormAndDropout) {
  Graph g = conv_bn_relu_block();
  Graph s = simplify_inference(g);
  EXPECT_EQ(count_op(s, "batch_norm"), 0);
  EXPECT_EQ(count_op(s, "dropout"), 0);
  EXPECT_LT(test::rel_error(run(s), run(g)), 1e-6);
}

// x / c for a float constant c (GELU's x / sqrt(2)) becomes x * (1 / c), the
// reciprocal folded; a division by a tensor that is not constant stays one.
TEST(Passes, SimplifyInferenceMultipliesByAConstantsReciprocal) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {2, 3}});
  NodeId q = g.add_op("divide", {x, g.add_scalar("sqrt2", f32, std::sqrt(2.0))});
  NodeId r = g.add_op("divide", {q, g.add_constant("c", const_f32({3}, 8, 0.5, 2))});
  g.add_output(g.add_op("divide", {r, x}), "y");
  Graph f = fold_constant(simplify_inference(g));
  EXPECT_EQ(count_op(f, "divide"), 1) << f;
  EXPECT_EQ(count_op(f, "multiply"), 2) << f;
  auto xv = test::random_floats(6, 9, 0.5, 2);
  std::vector<float> want = test::run_graph(g, {xv}, "interp", {false, false});
  std::vector<float> got = test::run_graph(f, {xv}, "interp", {false, false});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 4e-7 * std::fabs(want[i])) << i;
}

TEST(Passes, FoldConstantEvaluatesConstantSubgraphs) {
  Graph g = simplify_inference(conv_bn_relu_block());
  Graph f = fold_constant(g);
  // What is left: conv, multiply (the scale), add (the shift), relu, conv, add, relu.
  EXPECT_EQ(f.num_ops(), 7) << f;
  EXPECT_EQ(count_op(f, "sqrt"), 0);
  EXPECT_LT(test::rel_error(run(f), run(g)), 1e-6);
}

// Folding a constant's transpose or a matrix weight's packing copies its elements in
// C++ (evaluate_op's fast path); each element lands where the operator's definition
// puts it, in a float and an 8-bit type.
TEST(Passes, FoldingMovesAConstantsElementsWhereTheOperatorPutsThem) {
  for (DataType t : {f32, DataType::Int(8)}) {
    SCOPED_TRACE(t.to_string());
    auto constant = [&](std::vector<int64_t> shape) {
      auto b = std::make_shared<interp::HostBuffer>(t, shape);
      for (int64_t i = 0; i < b->size(); ++i) b->set_int(i, i % 113 - 56);
      return b;
    };
    Graph g;
    ConstData x = constant({2, 3, 4, 5});
    NodeId tr = g.add_op("transpose", {g.add_constant("x", x)}, {{"perm", std::vector<int64_t>{2, 0, 3, 1}}});
    ConstData y = evaluate_op(g, tr);
    ASSERT_EQ(y->shape(), (std::vector<int64_t>{4, 2, 5, 3}));
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t c = 0; c < 5; ++c)
          for (int64_t d = 0; d < 3; ++d)
            ASSERT_EQ(y->get_int(((a * 2 + b) * 5 + c) * 3 + d), x->get_int(((b * 3 + d) * 4 + a) * 5 + c));
    for (std::string layout : {"nk", "kn"}) {
      SCOPED_TRACE(layout);
      bool nk = layout == "nk";
      ConstData w = constant(nk ? std::vector<int64_t>{48, 6} : std::vector<int64_t>{6, 48});
      NodeId p = g.add_op("pack_matmul_weight", {g.add_constant("w" + layout, w)}, {{"block", int64_t{16}}, {"layout", layout}});
      ConstData packed = evaluate_op(g, p);
      ASSERT_EQ(packed->shape(), (std::vector<int64_t>{3, 6, 16}));
      for (int64_t panel = 0; panel < 3; ++panel)
        for (int64_t k = 0; k < 6; ++k)
          for (int64_t j = 0; j < 16; ++j) {
            int64_t col = panel * 16 + j;
            ASSERT_EQ(packed->get_int((panel * 6 + k) * 16 + j), w->get_int(nk ? col * 6 + k : k * 48 + col));
          }
    }
  }
}

// Zero padding of rows and columns written as a pad node becomes the convolution's or
// average pool's own; padding of other axes, of another value, or before a pool in
// ceil mode stays a pad.
TEST(Passes, FoldExplicitPaddingMovesZeroPadsIntoWindows) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 4, 7, 6}});
  auto pad = [&](std::vector<int64_t> p, double v = 0.0) { return g.add_op("pad", {x}, {{"pads", p}, {"value", v}}); };
  auto k3 = [](Attrs a = {}) {
    a.set("kernel", std::vector<int64_t>{3, 3});
    return a;
  };
  NodeId w = g.add_constant("w", const_f32({8, 4, 3, 3}, 1));
  NodeId p1 = pad({0, 0, 1, 2, 0, 0, 2, 1});
  g.add_output(g.add_op("conv2d", {p1, w}, {{"pads", std::vector<int64_t>{1, 0, 0, 1}}}), "conv");
  g.add_output(g.add_op("avg_pool2d", {p1}, k3({{"strides", std::vector<int64_t>{2, 2}}})), "pool");  // the same pad, read twice
  g.add_output(g.add_op("avg_pool2d", {pad({0, 0, 1, 1, 0, 0, 1, 1})}, k3({{"ceil_mode", int64_t{1}}, {"strides", std::vector<int64_t>{2, 2}}})), "ceil");
  g.add_output(g.add_op("avg_pool2d", {pad({0, 0, 1, 1, 0, 0, 1, 1})}, k3({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})), "own_pads");
  g.add_output(g.add_op("conv2d", {pad({0, 0, 1, 1, 0, 0, 1, 1}, 1.0), w}), "ones");
  g.add_output(g.add_op("conv2d", {pad({0, 4, 1, 1, 0, 4, 1, 1}), g.add_constant("w8", const_f32({8, 12, 3, 3}, 2))}), "channels");
  Graph f = dead_code_elimination(fold_explicit_padding(g));
  // conv and pool read x itself; ceil, own_pads, ones and channels keep their pads.
  EXPECT_EQ(count_op(f, "pad"), 4) << f;
  const Node& conv = f.node(f.outputs()[0]);
  EXPECT_EQ(conv.attrs.get_ints("pads"), (std::vector<int64_t>{2, 2, 2, 2})) << f;
  EXPECT_EQ(f.node(conv.inputs[0]).op, "input");
  const Node& pool = f.node(f.outputs()[1]);
  EXPECT_EQ(pool.attrs.get_int("count_include_pad", 0), 1);
  EXPECT_EQ(f.node(pool.inputs[0]).op, "input");
  auto xv = test::random_floats(4 * 7 * 6, 3);
  for (size_t out = 0; out < g.outputs().size(); ++out) {
    EXPECT_EQ(f.type(f.outputs()[out]), g.type(g.outputs()[out])) << out;
    auto want = test::run_graph(g, {xv}, "interp", {false, true}, out);
    EXPECT_LT(test::rel_error(test::run_graph(f, {xv}, "interp", {false, true}, out), want), 1e-6) << out;
  }
}

TEST(Passes, FoldScaleAxisMovesTheScaleIntoTheWeights) {
  Graph g = fold_constant(simplify_inference(conv_bn_relu_block()));
  Graph f = fold_constant(fold_scale_axis(g));
  EXPECT_EQ(count_op(f, "multiply"), 0) << f;
  EXPECT_EQ(f.num_ops(), 6);
  EXPECT_LT(test::rel_error(run(f), run(g)), 1e-5);
}

TEST(Passes, FoldScaleAxisLeavesOtherScalesAlone) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 2, 4, 4}});
  NodeId c = g.add_op("conv2d", {x, g.add_constant("w", const_f32({3, 2, 1, 1}, 1))});
  // A scale that varies along the width is not a per-channel scale.
  NodeId m = g.add_op("multiply", {c, g.add_constant("s", const_f32({1, 1, 4}, 2))});
  g.add_output(m);
  EXPECT_EQ(count_op(fold_scale_axis(g), "multiply"), 1);
}

TEST(Passes, DeadCodeAndCommonSubexpressions) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {8}});
  NodeId a = g.add_op("sigmoid", {x});
  NodeId b = g.add_op("sigmoid", {x});
  g.add_op("tanh", {x});  // unused
  NodeId c1 = g.add_constant("c1", const_f32({8}, 3));
  NodeId c2 = g.add_constant("c2", const_f32({8}, 3));  // same bytes as c1
  NodeId s = g.add_op("add", {g.add_op("multiply", {a, c1}), g.add_op("multiply", {b, c2})});
  g.add_output(s);
  Graph d = dead_code_elimination(g);
  EXPECT_EQ(count_op(d, "tanh"), 0);
  EXPECT_EQ(d.num_ops(), 5);
  Graph c = common_subexpression_elimination(d);
  EXPECT_EQ(count_op(c, "sigmoid"), 1);
  EXPECT_EQ(count_op(c, "multiply"), 1) << c;
  auto xv = test::random_floats(8, 4);
  EXPECT_LT(test::rel_error(test::run_graph(c, {xv}), test::run_graph(g, {xv})), 1e-7);
}

TEST(Passes, FuseOpsGroupsByPattern) {
  Graph g = optimize(conv_bn_relu_block());
  std::vector<FusedGroup> groups = fuse_ops(g);
  // conv1 + shift add + relu; conv2 + residual add + relu.
  ASSERT_EQ(groups.size(), 2u) << g;
  for (const auto& grp : groups) {
    EXPECT_EQ(g.node(grp.nodes.front()).op, "conv2d");
    EXPECT_EQ(g.node(grp.root()).op, "relu");
  }
  EXPECT_LT(test::rel_error(run(g, true), run(g, false)), 1e-6);
}

TEST(Passes, FuseOpsRules) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {2, 8}});
  NodeId t = g.add_op("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}});  // injective
  NodeId e = g.add_op("exp", {t});                                                 // elemwise
  NodeId m = g.add_op("mean", {e}, {{"axes", std::vector<int64_t>{1}}});           // reduce takes both
  NodeId r = g.add_op("sqrt", {m});                                                // and an elemwise after
  NodeId s = g.add_op("softmax", {r}, {{"axis", int64_t{0}}});                     // opaque: alone
  NodeId d = g.add_op("dense", {s, g.add_constant("w", const_f32({3, 1}, 1))});
  NodeId u = g.add_op("sigmoid", {d});  // after dense: fused
  NodeId v = g.add_op("reshape", {u}, {{"shape", std::vector<int64_t>{24}}});  // injective after dense: not
  g.add_output(v);
  std::vector<FusedGroup> groups = fuse_ops(g);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].nodes, (std::vector<NodeId>{t, e, m, r}));
  EXPECT_EQ(groups[1].nodes, (std::vector<NodeId>{s}));
  EXPECT_EQ(groups[2].nodes, (std::vector<NodeId>{d, u}));
  EXPECT_EQ(groups[3].nodes, (std::vector<NodeId>{v}));
  auto xv = test::random_floats(16, 5);
  EXPECT_LT(test::rel_error(test::run_graph(g, {xv}, "interp", {false, true}), test::run_graph(g, {xv}, "interp", {false, false})),
            1e-6);
}

// A depthwise convolution's group joins the group of its one user when that is a 1x1,
// stride 1, unpadded convolution over NCHWc data; not when it has two users, nor when
// its user is a 3x3 convolution.
TEST(Passes, FuseDepthwisePointwiseRules) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 32, 8, 8}});
  uint32_t seed = 20;
  auto conv = [&](NodeId t, int64_t out, int64_t in, int64_t k, int64_t groups, const std::string& name) {
    Attrs a{{"pads", std::vector<int64_t>(4, k / 2)}, {"strides", std::vector<int64_t>{1, 1}}};
    if (groups > 1) a.set("groups", groups);
    return g.add_op("conv2d", {t, g.add_constant(name + ".w", const_f32({out, in / groups, k, k}, seed++))}, a, name);
  };
  auto relu6 = [&](NodeId t) { return g.add_op("clip", {t}, {{"min", 0.0}, {"max", 6.0}}); };
  NodeId head = conv(x, 32, 32, 1, 1, "head");
  NodeId d1 = relu6(conv(head, 32, 32, 3, 32, "dw1"));
  NodeId p1 = conv(d1, 32, 32, 1, 1, "pw1");                       // fused with dw1
  NodeId d2 = conv(p1, 32, 32, 3, 32, "dw2");                      // two users: alone
  NodeId a = conv(d2, 16, 32, 1, 1, "pw2a"), b = conv(d2, 16, 32, 1, 1, "pw2b");
  NodeId d3 = conv(g.add_op("add", {a, b}), 16, 16, 3, 16, "dw3");  // a 3x3 user: alone
  g.add_output(conv(d3, 16, 16, 3, 1, "c3"));
  Graph o = optimize(g, target::MachineTraits{512, 32, 48 << 10, 1 << 20});
  std::vector<FusedGroup> plain = fuse_ops(o), fused = fuse_depthwise_pointwise(o, plain);
  ASSERT_EQ(fused.size(), plain.size() - 1) << o;
  auto group_of = [&](const std::string& name) -> const FusedGroup& {
    for (const FusedGroup& grp : fused)
      for (NodeId id : grp.nodes)
        if (o.node(id).name == name) return grp;
    ADD_FAILURE() << "no node " << name;
    return fused.front();
  };
  const FusedGroup& g1 = group_of("dw1");
  EXPECT_EQ(o.node(g1.nodes.front()).name, "dw1");
  EXPECT_EQ(&group_of("pw1"), &g1);
  EXPECT_EQ(o.node(g1.root()).name, "pw1");
  EXPECT_NE(&group_of("pw2a"), &group_of("dw2"));
  EXPECT_NE(&group_of("c3"), &group_of("dw3"));
  for (const FusedGroup& grp : fused)
    for (size_t i = 1; i < grp.nodes.size(); ++i) EXPECT_LT(grp.nodes[i - 1], grp.nodes[i]) << "topological order";
}

TEST(Passes, AlterLayoutBlocksConvolutions) {
  for (int64_t o : {16, 24, 4}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, {1, 5, 9, 11}});
    NodeId c = g.add_op("conv2d", {x, g.add_constant("w", const_f32({o, 5, 3, 3}, 1))},
                        {{"pads", std::vector<int64_t>{1, 0, 1, 2}}, {"strides", std::vector<int64_t>{2, 1}}});
    g.add_output(g.add_op("relu", {g.add_op("add", {c, g.add_constant("b", const_f32({o, 1, 1}, 2))})}));
    Graph a = fold_constant(alter_layout(g));
    EXPECT_EQ(count_op(a, "conv2d_nchwc"), o % 8 == 0 ? 1 : 0) << o;
    EXPECT_EQ(count_op(a, "pack_conv_weight"), 0) << "the packing is folded at compile time";
    auto xv = test::random_floats(5 * 9 * 11, 3);
    EXPECT_LT(test::rel_error(test::run_graph(a, {xv}, "interp", {false, true}), test::run_graph(g, {xv}, "interp", {false, true})),
              1e-6);
  }
}

TEST(Passes, AlterLayoutBlocksDepthwiseConvolutions) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 16, 9, 7}});
  NodeId c = g.add_op("conv2d", {x, g.add_constant("w", const_f32({16, 1, 3, 3}, 1))},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}, {"groups", int64_t{16}}});
  g.add_output(g.add_op("clip", {c}, {{"min", 0.0}, {"max", 6.0}}));
  Graph a = fold_constant(alter_layout(g));
  EXPECT_EQ(count_op(a, "conv2d_nchwc"), 1) << a;
  auto xv = test::random_floats(16 * 9 * 7, 3);
  EXPECT_LT(test::rel_error(test::run_graph(a, {xv}, "interp", {false, true}), test::run_graph(g, {xv}, "interp", {false, true})),
            1e-6);
}

// CarryLayout: a small ResNet/MobileNet mix (conv, bias, relu6, depthwise, residual add,
// max pooling, global pooling, a dense layer) stays NCHWc from the first convolution to
// the pooling; NCHW comes back once, after it. Results unchanged (the CPU's kernels for
// it: tests/cpu/conv_kernels_test.cc).
TEST(Passes, CarryLayoutKeepsConvolutionsBlocked) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 3, 12, 10}});
  Attrs pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  auto bias = [&](NodeId t, int64_t c, uint32_t seed) { return g.add_op("add", {t, g.add_constant("b", const_f32({c, 1, 1}, seed))}); };
  auto relu6 = [&](NodeId t) { return g.add_op("clip", {t}, {{"min", 0.0}, {"max", 6.0}}); };
  NodeId c1 = relu6(bias(g.add_op("conv2d", {x, g.add_constant("w1", const_f32({32, 3, 3, 3}, 1))}, pad1), 32, 2));
  Attrs dw = pad1;
  dw.set("groups", int64_t{32});
  NodeId d1 = relu6(bias(g.add_op("conv2d", {c1, g.add_constant("wd", const_f32({32, 1, 3, 3}, 3))}, dw), 32, 4));
  NodeId c2 = bias(g.add_op("conv2d", {d1, g.add_constant("w2", const_f32({32, 32, 1, 1}, 5))}), 32, 6);
  NodeId res = g.add_op("relu", {g.add_op("add", {c2, c1})});
  NodeId c3 = g.add_op("conv2d", {res, g.add_constant("w3", const_f32({24, 32, 3, 3}, 7))},
                       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}});
  NodeId p = g.add_op("max_pool2d", {g.add_op("relu", {c3})},
                      {{"kernel", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  NodeId gap = g.add_op("global_avg_pool2d", {p});
  NodeId flat = g.add_op("reshape", {gap}, {{"shape", std::vector<int64_t>{1, 24}}});
  g.add_output(g.add_op("dense", {flat, g.add_constant("fc", const_f32({10, 24}, 8))}), "y");
  g.add_output(p, "pooled");

  Graph a = optimize(g);
  EXPECT_EQ(count_op(a, "conv2d_nchwc"), 4) << a;
  // Back to NCHW once per tensor that leaves the blocked region: the global pool (for
  // the reshape) and the pooled output; nothing between the convolutions.
  EXPECT_EQ(count_op(a, "from_nchwc"), 2) << a;
  EXPECT_EQ(count_op(a, "to_nchwc"), 0) << "the biases' blocking is folded: " << a;
  for (const Node& n : a.nodes())
    if (n.op == "conv2d_nchwc") {
      EXPECT_EQ(n.type.ndim(), 5) << n.name << " hands on NCHWc";
    }
  auto xv = test::random_floats(3 * 12 * 10, 9);
  for (size_t out : {0, 1}) {
    auto want = test::run_graph(g, {xv}, "interp", {false, true}, out);
    EXPECT_LT(test::rel_error(test::run_graph(a, {xv}, "interp", {false, true}, out), want), 1e-5) << out;
  }
}

// The edges of the blocked region: an NCHW operand of the same shape is blocked to
// meet a blocked one (to_nchwc); an operand that broadcasts otherwise sends the blocked
// one back to NCHW; a depthwise convolution whose weight has another block than its
// data takes the data in NCHW; blocked graph outputs are NCHW.
TEST(Passes, CarryLayoutConvertsAtTheEdges) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 16, 6, 6}});
  NodeId z = g.add_input("z", {f32, {1, 16, 6, 6}});
  NodeId rowwise = g.add_input("r", {f32, {1, 1, 6, 1}});
  NodeId xb = g.add_op("conv2d_nchwc", {x, g.add_constant("w", const_f32({1, 16, 1, 1, 16}, 1))});
  NodeId s = g.add_op("add", {xb, g.add_op("sigmoid", {z})});  // NCHW of the same shape: blocked
  NodeId m = g.add_op("multiply", {s, rowwise});                  // broadcast over rows: back to NCHW
  NodeId dw = g.add_op("conv2d_nchwc", {s, g.add_constant("wd", const_f32({2, 1, 3, 3, 8}, 2))},
                       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"depthwise", int64_t{1}}});
  g.add_output(m, "m");
  g.add_output(dw, "dw");
  g.add_output(s, "s");
  Graph a = carry_layout(g);
  EXPECT_EQ(count_op(a, "to_nchwc"), 1) << a;
  // s goes back to NCHW once, for the multiply, the depthwise convolution and the
  // output; the depthwise result, only an output, stays NCHW (viewed in its kernel).
  EXPECT_EQ(count_op(a, "from_nchwc"), 1) << a;
  for (size_t k = 0; k < a.outputs().size(); ++k) EXPECT_EQ(a.type(a.outputs()[k]), g.type(g.outputs()[k])) << k;
  std::vector<std::vector<float>> in = {test::random_floats(16 * 36, 3), test::random_floats(16 * 36, 4), test::random_floats(6, 5)};
  for (size_t out : {0, 1, 2}) {
    auto want = test::run_graph(g, in, "interp", {false, true}, out);
    EXPECT_LT(test::rel_error(test::run_graph(a, in, "interp", {false, true}, out), want), 1e-6) << out;
  }
}

// A convolution whose result cannot stay blocked (here a graph output) still reads its
// blocked data as it is, and views its own result as NCHW: no from_nchwc before it.
TEST(Passes, CarryLayoutFeedsBlockedDataToALastConvolution) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 16, 6, 6}});
  NodeId a = g.add_op("conv2d_nchwc", {x, g.add_constant("w1", const_f32({2, 16, 1, 1, 16}, 1))});
  NodeId b = g.add_op("conv2d_nchwc", {g.add_op("relu", {a}), g.add_constant("w2", const_f32({1, 32, 3, 3, 16}, 2))},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  g.add_output(b, "y");
  Graph c = carry_layout(g);
  EXPECT_EQ(count_op(c, "from_nchwc"), 0) << c;
  const Node& last = c.node(c.outputs()[0]);
  EXPECT_EQ(last.op, "conv2d_nchwc");
  EXPECT_EQ(c.type(last.inputs[0]).ndim(), 5) << c;
  EXPECT_EQ(last.type, g.type(b));
  auto xv = test::random_floats(16 * 36, 3);
  EXPECT_LT(test::rel_error(test::run_graph(c, {xv}, "interp", {false, true}), test::run_graph(g, {xv}, "interp", {false, true})), 1e-6);
}

// Branches joined along the channels stay blocked where every branch has whole blocks
// (Inception's modules): in the smallest block of the blocked ones, an NCHW branch
// blocked to meet them, one in a larger block re-blocked; a concatenation with a
// part-block operand takes NCHW.
TEST(Passes, CarryLayoutJoinsBranchesBlocked) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 16, 6, 6}});
  NodeId z = g.add_input("z", {f32, {1, 4, 6, 6}});
  Attrs pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  NodeId a = g.add_op("conv2d_nchwc", {x, g.add_constant("w1", const_f32({1, 16, 1, 1, 16}, 1))});
  NodeId b = g.add_op("conv2d_nchwc", {x, g.add_constant("w2", const_f32({2, 16, 3, 3, 16}, 2))}, pad1);
  NodeId cat1 = g.add_op("concatenate", {g.add_op("relu", {a}), b}, {{"axis", int64_t{1}}});
  NodeId c = g.add_op("conv2d_nchwc", {cat1, g.add_constant("w3", const_f32({1, 48, 3, 3, 8}, 3))}, pad1);
  NodeId p = g.add_op("max_pool2d", {x},
                      {{"kernel", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  NodeId cat2 = g.add_op("concatenate", {c, p}, {{"axis", int64_t{-3}}});
  NodeId d = g.add_op("conv2d_nchwc", {cat2, g.add_constant("w4", const_f32({1, 24, 1, 1, 16}, 4))});
  NodeId cat3 = g.add_op("concatenate", {a, z}, {{"axis", int64_t{1}}});
  // A 16-blocked operand beside an 8-blocked one: re-blocked by 8 (through NCHW).
  NodeId cat4 = g.add_op("concatenate", {g.add_op("sigmoid", {b}), c}, {{"axis", int64_t{1}}});
  NodeId e = g.add_op("conv2d_nchwc", {cat4, g.add_constant("w5", const_f32({1, 40, 1, 1, 16}, 7))});
  g.add_output(d, "d");
  g.add_output(cat3, "joined");
  g.add_output(e, "e");
  Graph r = carry_layout(g);
  int blocked = 0;
  for (const Node& n : r.nodes())
    if (n.op == "concatenate" && n.type.ndim() == 5) {
      ++blocked;
      EXPECT_EQ(r.type(n.inputs[0]).shape[4], n.type.shape[4]) << n.name;
    }
  EXPECT_EQ(blocked, 3) << r;
  EXPECT_EQ(count_op(r, "to_nchwc"), 2) << "the pooled branch and sigmoid(b), blocked by 8: " << r;
  EXPECT_EQ(count_op(r, "from_nchwc"), 2) << "the first branch, for the concatenation with z, and sigmoid(b): " << r;
  for (size_t k = 0; k < r.outputs().size(); ++k) EXPECT_EQ(r.type(r.outputs()[k]), g.type(g.outputs()[k])) << k;
  std::vector<std::vector<float>> in = {test::random_floats(16 * 36, 5), test::random_floats(4 * 36, 6)};
  for (size_t out : {0, 1, 2}) {
    auto want = test::run_graph(g, in, "interp", {false, true}, out);
    EXPECT_LT(test::rel_error(test::run_graph(r, in, "interp", {false, true}, out), want), 1e-6) << out;
  }
}

// A squeeze-and-excitation block (EfficientNet's, MobileNetV3's): the channels' scales,
// [1, C, 1, 1] from the pooled features' convolutions, multiply the features in NCHWc,
// in either operand order, where both are in the same block; a scale in another block
// sends the product to NCHW.
TEST(Passes, CarryLayoutScalesChannelsBlocked) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 16, 6, 6}});
  NodeId a = g.add_op("relu", {g.add_op("conv2d_nchwc", {x, g.add_constant("w1", const_f32({2, 16, 1, 1, 16}, 1))})});
  NodeId pooled = g.add_op("global_avg_pool2d", {a});
  NodeId squeezed = g.add_op("relu", {g.add_op("conv2d_nchwc", {pooled, g.add_constant("w2", const_f32({1, 32, 1, 1, 16}, 2))})});
  NodeId scale = g.add_op("sigmoid", {g.add_op("conv2d_nchwc", {squeezed, g.add_constant("w3", const_f32({2, 16, 1, 1, 16}, 3))})});
  NodeId y1 = g.add_op("multiply", {a, scale});
  NodeId y2 = g.add_op("multiply", {scale, a});
  NodeId scale8 = g.add_op("conv2d_nchwc", {squeezed, g.add_constant("w4", const_f32({4, 16, 1, 1, 8}, 4))});
  NodeId y3 = g.add_op("multiply", {a, scale8});
  NodeId w5 = g.add_constant("w5", const_f32({1, 32, 1, 1, 16}, 5));
  g.add_output(g.add_op("conv2d_nchwc", {y1, w5}), "y1");
  g.add_output(g.add_op("conv2d_nchwc", {y2, w5}), "y2");
  g.add_output(g.add_op("conv2d_nchwc", {y3, w5}), "y3");
  Graph r = carry_layout(g);
  int blocked = 0;
  for (const Node& n : r.nodes()) blocked += n.op == "multiply" && n.type.ndim() == 5;
  EXPECT_EQ(blocked, 2) << r;
  EXPECT_EQ(count_op(r, "from_nchwc"), 2) << "a and the 8-blocked scale, for the third product: " << r;
  std::vector<std::vector<float>> in = {test::random_floats(16 * 36, 6)};
  for (size_t out : {0, 1, 2}) {
    auto want = test::run_graph(g, in, "interp", {false, true}, out);
    EXPECT_LT(test::rel_error(test::run_graph(r, in, "interp", {false, true}, out), want), 1e-6) << out;
  }
}

TEST(Passes, AlterLayoutPacksConstantMatrixProducts) {
  target::MachineTraits avx512{512, 32, 48 << 10, 2 << 20};
  // Columns -> panel width: whole vectors where they divide, else half vectors, else none.
  EXPECT_EQ(register_tile_columns(1024, avx512), 64);
  EXPECT_EQ(register_tile_columns(768, avx512), 64);
  EXPECT_EQ(register_tile_columns(1000, avx512), 40);
  EXPECT_EQ(register_tile_columns(10, avx512), 10);
  EXPECT_EQ(register_tile_columns(1009, avx512), 0);
  EXPECT_EQ(register_tile_columns(1024, target::MachineTraits{256, 16}), 16);
  for (int64_t n : {96, 10, 1009}) {
    // dense(x, W) + bias -> relu, and a 2-d matmul by a constant [K, N].
    Graph g;
    NodeId x = g.add_input("x", {f32, {6, 40}});
    NodeId d = g.add_op("dense", {x, g.add_constant("w", const_f32({n, 40}, 1))});
    NodeId y = g.add_op("relu", {g.add_op("add", {d, g.add_constant("b", const_f32({n}, 2))})});
    g.add_output(y, "y");
    g.add_output(g.add_op("matmul", {x, g.add_constant("m", const_f32({40, n}, 3))}), "z");
    Graph a = fold_constant(alter_layout(g, avx512));
    EXPECT_EQ(count_op(a, "matmul_packed"), n == 1009 ? 0 : 2) << n;
    EXPECT_EQ(count_op(a, "pack_matmul_weight"), 0) << "the packing is folded at compile time";
    auto xv = test::random_floats(6 * 40, 4);
    for (size_t out : {0, 1}) {
      auto want = test::run_graph(g, {xv}, "interp", {false, true}, out);
      EXPECT_LT(test::rel_error(test::run_graph(a, {xv}, "interp", {false, true}, out), want), 1e-6) << n;
    }
  }
}

// PadChannels on AVX-512 (16 lanes): the 24- and 40-channel convolutions get zero
// filters up to 32 and 48; the zeros go on through the bias, relu6, a depthwise
// convolution, the residual add and a multiply by a scalar, and the next convolutions
// get zero weights for them; a sigmoid (0 -> 0.5) and the graph's output read the real
// channels through a slice. 8 channels (one half vector) stay as they are; 20 (not a
// multiple of 8: ShuffleNet's 58 and 116, a segmentation head's 21 classes) grow to 32
// too. Results unchanged, before and after the whole pipeline.
TEST(Passes, PadChannelsFillsWholeVectors) {
  target::MachineTraits avx512{512, 32, 48 << 10, 2 << 20};
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 16, 8, 8}});
  Attrs pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  auto bias = [&](NodeId t, int64_t c, uint32_t seed) { return g.add_op("add", {t, g.add_constant("b", const_f32({c, 1, 1}, seed))}); };
  auto relu6 = [&](NodeId t) { return g.add_op("clip", {t}, {{"min", 0.0}, {"max", 6.0}}); };
  NodeId a = relu6(bias(g.add_op("conv2d", {x, g.add_constant("w1", const_f32({24, 16, 1, 1}, 1))}), 24, 2));
  Attrs dw = pad1;
  dw.set("groups", int64_t{24});
  NodeId d = relu6(bias(g.add_op("conv2d", {a, g.add_constant("wd", const_f32({24, 1, 3, 3}, 3))}, dw), 24, 4));
  NodeId c = bias(g.add_op("conv2d", {d, g.add_constant("w2", const_f32({24, 24, 1, 1}, 5))}), 24, 6);
  NodeId s = g.add_op("multiply", {g.add_op("add", {c, a}), g.add_scalar("half", f32, 0.5)});
  NodeId y = g.add_op("relu", {g.add_op("conv2d", {s, g.add_constant("w3", const_f32({40, 24, 3, 3}, 7))}, pad1)});
  NodeId e = g.add_op("conv2d", {x, g.add_constant("w4", const_f32({8, 16, 1, 1}, 8))});
  NodeId f = g.add_op("conv2d", {x, g.add_constant("w5", const_f32({20, 16, 1, 1}, 9))});
  g.add_output(y, "y");
  g.add_output(g.add_op("sigmoid", {s}), "z");
  g.add_output(e, "e");
  g.add_output(f, "f");

  Graph p = fold_constant(pad_channels(g, avx512));
  std::vector<int64_t> channels;
  for (const Node& n : p.nodes())
    if (n.op == "conv2d") channels.push_back(n.type.shape[1]);
  EXPECT_EQ(channels, (std::vector<int64_t>{32, 32, 32, 48, 8, 32})) << p;
  EXPECT_EQ(count_op(p, "pad"), 0) << "the constants' padding is folded: " << p;
  EXPECT_EQ(count_op(p, "strided_slice"), 3) << "one for the sigmoid, one for each of the outputs y and f: " << p;
  for (size_t k = 0; k < p.outputs().size(); ++k) EXPECT_EQ(p.type(p.outputs()[k]), g.type(g.outputs()[k])) << k;
  EXPECT_EQ(count_op(pad_channels(g, target::MachineTraits{256, 16}), "pad"), 1) << "on AVX2 (8 lanes) only the 20 channels grow (to 24)";

  Graph o = optimize(g, avx512);
  auto xv = test::random_floats(16 * 64, 10);
  for (size_t out : {0, 1, 2, 3}) {
    auto want = test::run_graph(g, {xv}, "interp", {false, true}, out);
    EXPECT_LT(test::rel_error(test::run_graph(p, {xv}, "interp", {false, true}, out), want), 1e-6) << out;
    EXPECT_LT(test::rel_error(test::run_graph(o, {xv}, "interp", {false, true}, out), want), 1e-5) << out;
  }
}

// A reshape computed alone is a view: no kernel, its source's storage, which stays
// live until the view's last reader (here after a tensor of the same size that would
// otherwise take the block).
// A float16 model computes in float32 (promote_half): a cast at each edge, constants
// converted, an explicit cast to float16 kept (and cast back); after optimize() its
// convolution is the CPU's blocked one, as a float32 model's. The results are a float32
// evaluation's on the same half-precision values, rounded to float16 at the output.
TEST(Passes, PromoteHalfComputesInFloat32) {
  const DataType f16 = DataType::Float(16);
  auto half_of = [&](const ConstData& c) {
    auto b = std::make_shared<interp::HostBuffer>(f16, c->shape());
    for (int64_t k = 0; k < b->size(); ++k) b->set(k, c->get(k));
    return b;
  };
  const ConstData w = half_of(const_f32({16, 16, 3, 3}, 21, -0.2f, 0.2f));
  // r = relu(conv(x, w)); y = cast(r * 3 to the half type) + r.
  auto model = [&](DataType t, const ConstData& weight) {
    Graph g;
    NodeId x = g.add_input("x", {t, {1, 16, 8, 8}});
    NodeId c = g.add_op("conv2d", {x, g.add_constant("w", weight)}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "conv");
    NodeId r = g.add_op("relu", {c});
    NodeId s = g.add_op("multiply", {g.add_op("cast", {r}, {{"dtype", "float32"}}), g.add_scalar("three", f32, 3)});
    NodeId h = g.add_op("cast", {s}, {{"dtype", f16.to_string()}});
    if (t == f32) h = g.add_op("cast", {h}, {{"dtype", "float32"}});
    g.add_output(g.add_op("add", {h, r}), "y");
    return g;
  };
  Graph g = model(f16, w);
  Graph p = promote_half(g);
  ASSERT_EQ(p.type(p.outputs()[0]).dtype, f16);
  int half = 0;
  for (const Node& n : p.nodes()) half += n.type.dtype == f16;
  EXPECT_EQ(half, 3) << p;  // the input, the explicit cast, the output's cast
  EXPECT_EQ(count_op(optimize(g), "conv2d_nchwc"), 1) << optimize(g);

  auto xv = test::random_floats(16 * 64, 22);
  std::vector<uint16_t> xh;
  for (float& v : xv) {
    xh.push_back(ir::float_to_half_bits(v));
    v = static_cast<float>(ir::half_bits_to_float(xh.back()));
  }
  auto wf = std::make_shared<interp::HostBuffer>(f32, w->shape());
  for (int64_t k = 0; k < w->size(); ++k) wf->set(k, w->get(k));
  const std::vector<float> want = test::run_graph(model(f32, wf), {xv});
  Executor ex = make_executor(compile(g), "interp");
  ex.set_input(0, xh.data(), static_cast<int64_t>(xh.size() * sizeof(uint16_t)));
  ex.run();
  ASSERT_EQ(ex.output_type(0).size(), static_cast<int64_t>(want.size()));
  const auto* y = static_cast<const uint16_t*>(ex.output(0));
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_EQ(y[k], ir::float_to_half_bits(want[k])) << k << ": " << ir::half_bits_to_float(y[k]) << " against " << want[k];
}

TEST(MemoryPlan, AReshapeAloneIsAView) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {4, 64}});
  NodeId s = g.add_op("sigmoid", {x});
  NodeId r = g.add_op("reshape", {s}, {{"shape", std::vector<int64_t>{256}}});
  NodeId t = g.add_op("tanh", {s});
  NodeId e = g.add_op("exp", {t});
  NodeId flat_e = g.add_op("reshape", {e}, {{"shape", std::vector<int64_t>{256}}});
  g.add_output(g.add_op("add", {flat_e, r}));
  // One kernel per operator: the two reshapes are views.
  auto m = compile(g, {false, false});
  EXPECT_EQ(m.kernels.size(), 4u) << "sigmoid, tanh, exp, add";
  EXPECT_EQ(m.memory.storage_of[r], m.memory.storage_of[s]);
  EXPECT_EQ(m.memory.storage_of[flat_e], m.memory.storage_of[e]);
  EXPECT_NE(m.memory.storage_of[e], m.memory.storage_of[s]);
  EXPECT_NE(m.memory.storage_of[t], m.memory.storage_of[s]);
  auto xv = test::random_floats(256, 5);
  std::vector<float> ref;
  for (float v : xv) {
    double sg = 1 / (1 + std::exp(-static_cast<double>(v)));
    ref.push_back(static_cast<float>(std::exp(std::tanh(sg)) + sg));
  }
  EXPECT_LT(test::rel_error(test::run_graph(g, {xv}, "interp", {false, false}), ref), 1e-6);
}

TEST(MemoryPlan, ReusesDeadBuffers) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1024}});
  NodeId cur = x;
  for (int i = 0; i < 6; ++i) cur = g.add_op(i % 2 ? "relu" : "sigmoid", {cur});
  g.add_output(cur);
  auto m = compile(g, {false, false});
  ASSERT_EQ(m.kernels.size(), 6u);
  // Input and output pinned; the 5 intermediates ping-pong between two blocks.
  EXPECT_EQ(m.memory.storage_bytes.size(), 4u);
  EXPECT_LT(m.memory.total_bytes(), m.memory.unshared_bytes);
  for (size_t k = 0; k < m.kernels.size(); ++k)
    for (NodeId i : m.kernels[k].inputs)
      for (NodeId o : m.kernels[k].outputs) EXPECT_NE(m.memory.storage_of[i], m.memory.storage_of[o]);
  auto xv = test::random_floats(1024, 6);
  std::vector<float> ref = xv;
  for (int i = 0; i < 6; ++i)
    for (float& v : ref) v = i % 2 ? std::max(v, 0.0f) : static_cast<float>(1 / (1 + std::exp(-static_cast<double>(v))));
  EXPECT_LT(test::rel_error(test::run_graph(g, {xv}, "interp", {false, false}), ref), 1e-6);
}

}  // namespace
}  // namespace kiln::graph
