// Elementwise formulas on the CPU against their definitions: erf, a rational function
// of x^2 evaluated by every backend the same way (ops.cc), and softmax, whose rows
// are scaled by the reciprocal of their sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "tests/cpu/kernel_test_util.h"

namespace kiln::graph {
namespace {

const ir::DataType f32 = ir::DataType::Float(32);

class ElementwiseKernels : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

std::vector<float> run(const Graph& g, const std::vector<float>& x, const std::string& target) {
  return target == "interp" ? test_util::run_graph(g, x, "interp", "") : test_util::run_graph(g, x, "cpu", target);
}

// Within 4.5e-7 of erf's own size over -5..5 and tiny arguments: near 0 too, where an
// absolute bound (Abramowitz and Stegun's 1.5e-7) is far from it; exactly +-1 where
// float rounds it so; NaN stays NaN.
TEST_P(ElementwiseKernels, ErfWithinItsRelativeBound) {
  std::vector<float> xv;
  for (int i = -4000; i <= 4000; ++i) xv.push_back(static_cast<float>(i) / 800);
  for (float v = 1e-30f; v < 1; v *= 1.7f) xv.insert(xv.end(), {v, -v});
  xv.insert(xv.end(), {3.9f, 3.925f, 3.95f, 40.0f, -40.0f, INFINITY, -INFINITY, std::nanf("")});
  Graph g;
  NodeId x = g.add_input("x", {f32, {static_cast<int64_t>(xv.size())}});
  g.add_output(g.add_op("erf", {x}), "y");
  std::vector<float> y = run(g, xv, GetParam());
  ASSERT_EQ(y.size(), xv.size());
  for (size_t i = 0; i + 1 < xv.size(); ++i) {
    double want = std::erf(static_cast<double>(xv[i]));
    EXPECT_LE(std::fabs(y[i] - want), 4.5e-7 * std::fabs(want)) << "erf(" << xv[i] << ") = " << y[i];
  }
  EXPECT_EQ(y[y.size() - 3], 1.0f);
  EXPECT_EQ(y[y.size() - 2], -1.0f);
  EXPECT_TRUE(std::isnan(y.back()));
}

// Softmax over the last axis of [12, 128, 128] (BERT-base's attention), against the
// definition in double: each value within 1e-6 of its own size.
TEST_P(ElementwiseKernels, SoftmaxRows) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {12, 128, 128}});
  g.add_output(g.add_op("softmax", {x}, {{"axis", int64_t{-1}}}), "y");
  auto xv = test::random_floats(12 * 128 * 128, 7, -8, 8);
  std::vector<float> y = run(g, xv, GetParam());
  ASSERT_EQ(y.size(), xv.size());
  for (size_t r = 0; r < 12 * 128; ++r) {
    const float* row = &xv[r * 128];
    double mx = row[0], sum = 0;
    for (int j = 0; j < 128; ++j) mx = std::max<double>(mx, row[j]);
    for (int j = 0; j < 128; ++j) sum += std::exp(row[j] - mx);
    for (int j = 0; j < 128; ++j) {
      double want = std::exp(row[j] - mx) / sum;
      ASSERT_NEAR(y[r * 128 + j], want, 1e-6 * want + 1e-12) << "row " << r << " column " << j;
    }
  }
}

std::vector<std::string> targets() {
  std::vector<std::string> t = test_util::kKernelTargets;
  t.push_back("interp");
  return t;
}

std::string target_name(const ::testing::TestParamInfo<std::string>& i) {
  return i.param == "interp" ? "interp" : test_util::kernel_target_name(i);
}

INSTANTIATE_TEST_SUITE_P(Targets, ElementwiseKernels, ::testing::ValuesIn(targets()), target_name);

}  // namespace
}  // namespace kiln::graph
