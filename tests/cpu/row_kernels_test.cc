// Row reductions on the CPU: a kernel whose stages are reductions that keep the leading
// axes of its output (a layer norm's halves, a softmax) computes each row whole at the output's
// parallel loop over rows, one launch for all its stages. Results against the
// interpreter on the host and narrower targets; the parallel loops of each kernel.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "compiler/ir/printer.h"
#include "tests/cpu/kernel_test_util.h"

namespace kiln::graph {
namespace {

const ir::DataType f32 = ir::DataType::Float(32);

class RowKernels : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

// A layer norm over 768 of 128 rows (BERT-base's), as the ONNX frontend writes it:
// d = x - mean(x); d / sqrt(mean(d * d) + eps) * gamma + beta. Its kernels (FuseOps
// makes two) each have one parallel loop, over the 128 rows.
TEST_P(RowKernels, ALayerNormComputesEachRowAtOneParallelLoop) {
  const std::string target = GetParam();
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 128, 768}});
  Attrs mean{{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}};
  NodeId d = g.add_op("subtract", {x, g.add_op("mean", {x}, mean)});
  NodeId var = g.add_op("mean", {g.add_op("multiply", {d, d})}, mean);
  NodeId eps = g.add_constant("eps", test_util::random_constant({1}, 3));
  NodeId y = g.add_op("divide", {d, g.add_op("sqrt", {g.add_op("add", {var, g.add_op("abs", {eps})})})});
  y = g.add_op("add", {g.add_op("multiply", {y, g.add_constant("gamma", test_util::random_constant({768}, 4))}),
                       g.add_constant("beta", test_util::random_constant({768}, 5))});
  g.add_output(y, "y");
  auto in = test::random_floats(128 * 768, 6);
  CompiledModel m;
  std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
  EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << target;
  ASSERT_GE(m.kernels.size(), 1u);
  for (const auto& k : m.kernels) {
    EXPECT_EQ(test_util::parallel_extents(k.func), std::vector<int64_t>{128}) << k.func.name << " on " << target;
  }
}

// A softmax over rows of 128 (BERT-base's attention, [1, 12, 128, 128]): one kernel,
// one parallel loop over the 1536 rows, the row's maximum and sum as lane reductions.
TEST_P(RowKernels, ASoftmaxComputesEachRowAtOneParallelLoop) {
  const std::string target = GetParam();
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 12, 128, 128}});
  g.add_output(g.add_op("softmax", {x}, {{"axis", int64_t{-1}}}), "y");
  auto in = test::random_floats(12 * 128 * 128, 7);
  CompiledModel m;
  std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
  EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "")), 1e-5) << target;
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(test_util::parallel_extents(m.kernels[0].func), std::vector<int64_t>{1536}) << target;
  std::string body = ir::to_string(m.kernels[0].func.body);
  EXPECT_NE(body.find("vector_reduce_max"), std::string::npos) << body;
  EXPECT_NE(body.find("vector_reduce_add"), std::string::npos) << body;
}

// Rows that no vector divides (ViT's 197 tokens): a softmax and a mean over 197 take
// vectors of 16 up to the last, partial one, which loop partitioning leaves to a scalar
// loop of its own; the full vectors' loops test nothing. Results those of the
// interpreter.
TEST_P(RowKernels, RowsOfAwkwardLengthAreVectorsUpToTheLast) {
  const std::string target = GetParam();
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 12, 197, 197}});
  NodeId sm = g.add_op("softmax", {x}, {{"axis", int64_t{-1}}});
  g.add_output(sm, "y");
  g.add_output(g.add_op("mean", {x}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}}), "m");
  auto in = test::random_floats(12 * 197 * 197, 8);
  for (size_t out : {0, 1}) {
    CompiledModel m;
    std::vector<float> got = test_util::run_graph(g, in, "cpu", target, out, &m);
    EXPECT_LT(test::rel_error(got, test_util::run_graph(g, in, "interp", "", out)), 1e-5) << target << " output " << out;
    ASSERT_GE(m.kernels.size(), 1u);
    std::string body;
    for (const auto& k : m.kernels) body += ir::to_string(k.func.body);
    EXPECT_EQ(body.find("if ("), std::string::npos) << target << ": no test left in the loops\n" << body;
    EXPECT_NE(body.find(out == 0 ? "vector_reduce_max" : "vector_reduce_add"), std::string::npos) << target << "\n" << body;
    EXPECT_NE(body.find("for (rk, 0, 12)"), std::string::npos) << target << ": 12 whole vectors, the 13th apart\n" << body;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, RowKernels, ::testing::ValuesIn(test_util::kKernelTargets), test_util::kernel_target_name);

}  // namespace
}  // namespace kiln::graph
