// The ONNX selection, scatter and index converters (index_converters.cc, the graph ops
// of ops_index.cc): results the conformance suite leaves open (TopK's ties) and the
// errors bad attributes give, each naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/e2e/onnx_import_util.h"
#include "tests/e2e/test_util.h"

namespace kiln::frontend {
namespace {

using graph::Graph;
using test::OnnxBuilder;
using test::count_op;
using test::import_error;



// The model's output `k` as int64 after running it on the interpreter with float input x.
std::vector<int64_t> int64_output(const Graph& g, const std::vector<float>& x, size_t k) {
  graph::Executor ex = graph::make_executor(graph::compile(g), "interp");
  ex.set_input(0, x.data(), static_cast<int64_t>(x.size() * sizeof(float)));
  ex.run();
  std::vector<int64_t> out(static_cast<size_t>(ex.output_type(k).size()));
  std::memcpy(out.data(), ex.output(k), out.size() * sizeof(int64_t));
  return out;
}

OnnxBuilder top_k_model(int64_t k, int64_t axis, int64_t largest) {
  OnnxBuilder b(11);
  b.input("x", {2, 4});
  b.initializer_i64("k", {1}, {k});
  auto* n = b.node("TopK", {"x", "k"}, {"values", "indices"}, "topk1");
  OnnxBuilder::attr(n, "axis", axis);
  OnnxBuilder::attr(n, "largest", largest);
  b.output("values");
  b.output("indices");
  return b;
}

// Equal values come out in the order of their positions, best first.
TEST(OnnxIndexOps, TopKTiesByLowerIndex) {
  std::vector<float> x{1, 3, 3, 2, 5, 5, 5, 0};
  Graph g = import_onnx_bytes(top_k_model(3, 1, 1).bytes());
  EXPECT_EQ(test::run_graph(g, {x}), (std::vector<float>{3, 3, 2, 5, 5, 5}));
  EXPECT_EQ(int64_output(g, x, 1), (std::vector<int64_t>{1, 2, 3, 0, 1, 2}));
  Graph s = import_onnx_bytes(top_k_model(2, -1, 0).bytes());
  EXPECT_EQ(test::run_graph(s, {x}), (std::vector<float>{1, 2, 0, 5}));
  EXPECT_EQ(int64_output(s, x, 1), (std::vector<int64_t>{0, 3, 3, 0}));
}

TEST(OnnxIndexErrors, TopKOutOfRange) {
  std::string e = import_error(top_k_model(5, 1, 1).bytes());
  EXPECT_NE(e.find("node 'topk1' (TopK"), std::string::npos) << e;
  EXPECT_NE(e.find("k = 5 is out of range for axis 1 of length 4"), std::string::npos) << e;
  e = import_error(top_k_model(2, 2, 1).bytes());
  EXPECT_NE(e.find("node 'topk1'"), std::string::npos) << e;
  EXPECT_NE(e.find("axis 2 is out of range for rank 2"), std::string::npos) << e;
}

TEST(OnnxIndexErrors, GatherNDBatchDims) {
  OnnxBuilder b(13);
  b.input("data", {2, 3});
  b.initializer_i64("idx", {2, 1}, {0, 1});
  auto* n = b.node("GatherND", {"data", "idx"}, {"y"}, "gnd");
  OnnxBuilder::attr(n, "batch_dims", int64_t{2});
  b.output("y");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("node 'gnd' (GatherND"), std::string::npos) << e;
  EXPECT_NE(e.find("batch_dims 2 is out of range"), std::string::npos) << e;
}

TEST(OnnxIndexErrors, ScatterReductionAndAxis) {
  for (auto [attr, want] : std::vector<std::pair<std::string, std::string>>{
           {"reduction", "reduction 'sub' is not one of none, add, mul, max, min"}, {"axis", "axis 3 is out of range for rank 2"}}) {
    OnnxBuilder b(16);
    b.input("data", {2, 3});
    b.initializer_i64("idx", {1, 2}, {0, 1});
    b.initializer("upd", {1, 2}, {1, 2});
    auto* n = b.node("ScatterElements", {"data", "idx", "upd"}, {"y"}, "sc");
    if (attr == "reduction") OnnxBuilder::attr(n, "reduction", std::string("sub"));
    else OnnxBuilder::attr(n, "axis", int64_t{3});
    b.output("y");
    std::string e = import_error(b.bytes());
    EXPECT_NE(e.find("node 'sc' (ScatterElements"), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
  }
}

TEST(OnnxIndexErrors, ScatterNDUpdatesShape) {
  OnnxBuilder b(16);
  b.input("data", {4, 3});
  b.initializer_i64("idx", {2, 1}, {0, 1});
  b.initializer("upd", {2, 2}, {1, 2, 3, 4});
  b.node("ScatterND", {"data", "idx", "upd"}, {"y"}, "snd");
  b.output("y");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("node 'snd' (ScatterND"), std::string::npos) << e;
  EXPECT_NE(e.find("updates must be [2, 3]"), std::string::npos) << e;
}

// An einsum over a reduced and a kept letter (a matmul), one with a diagonal (the
// general op), and a subscript whose extents differ.
TEST(OnnxIndexOps, EinsumMatmulDiagonalAndMismatch) {
  OnnxBuilder b(12);
  b.input("x", {2, 3});
  b.initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  auto* n = b.node("Einsum", {"x", "w"}, {"y"}, "ein");
  OnnxBuilder::attr(n, "equation", std::string("ij,jk"));
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes());
  EXPECT_EQ(test::run_graph(g, {{1, 0, 0, 0, 1, 1}}), (std::vector<float>{1, 2, 8, 10}));
  EXPECT_EQ(count_op(g, "matmul"), 1);

  OnnxBuilder d(12);
  d.input("x", {2, 2});
  d.initializer("w", {2}, {3, 5});
  auto* dn = d.node("Einsum", {"x", "w"}, {"y"}, "diag");
  OnnxBuilder::attr(dn, "equation", std::string("ii,i->i"));
  d.output("y");
  Graph dg = import_onnx_bytes(d.bytes());
  EXPECT_EQ(count_op(dg, "einsum"), 1);
  EXPECT_EQ(test::run_graph(dg, {{1, 2, 3, 4}}), (std::vector<float>{3, 20}));

  OnnxBuilder bad(12);
  bad.input("x", {2, 3});
  bad.initializer("w", {2, 2}, {1, 2, 3, 4});
  auto* m = bad.node("Einsum", {"x", "w"}, {"y"}, "ein2");
  OnnxBuilder::attr(m, "equation", std::string("ij,jk->ik"));
  bad.output("y");
  std::string e = import_error(bad.bytes());
  EXPECT_NE(e.find("node 'ein2' (Einsum"), std::string::npos) << e;
  EXPECT_NE(e.find("subscript 'j' has extents 3 and 2"), std::string::npos) << e;
}

TEST(OnnxIndexErrors, DetOfLargeOrNonSquare) {
  for (auto [shape, want] : std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{6, 6}, "det of 6x6 matrices is not supported"}, {{2, 3}, "det takes square matrices"}}) {
    OnnxBuilder b(11);
    b.input("x", shape);
    b.node("Det", {"x"}, {"y"}, "det1");
    b.output("y");
    std::string e = import_error(b.bytes());
    EXPECT_NE(e.find("node 'det1' (Det"), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
  }
}

// Resize's cubic mode and tf_crop_and_resize need what they read: a mode Kiln knows, a
// roi of two values per dimension.
TEST(OnnxIndexErrors, ResizeModeAndRoi) {
  OnnxBuilder b(13);
  b.input("x", {1, 1, 2, 2});
  b.initializer("roi", {4}, {0, 0, 1, 1});
  b.initializer("scales", {4}, {1, 1, 2, 2});
  auto* n = b.node("Resize", {"x", "roi", "scales"}, {"y"}, "rs");
  OnnxBuilder::attr(n, "coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  OnnxBuilder::attr(n, "mode", std::string("cubic"));
  b.output("y");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("node 'rs' (Resize"), std::string::npos) << e;
  EXPECT_NE(e.find("needs a roi of 8 values (starts, ends), it has 4"), std::string::npos) << e;
}

// Sin ... Atanh through the interpreter: the C library's double result, rounded once.
TEST(OnnxIndexOps, TrigonometricOnTheInterpreter) {
  const std::vector<std::pair<std::string, double (*)(double)>> ops = {
      {"Sin", [](double v) { return std::sin(v); }},     {"Cos", [](double v) { return std::cos(v); }},
      {"Tan", [](double v) { return std::tan(v); }},     {"Asin", [](double v) { return std::asin(v); }},
      {"Acos", [](double v) { return std::acos(v); }},   {"Atan", [](double v) { return std::atan(v); }},
      {"Sinh", [](double v) { return std::sinh(v); }},   {"Cosh", [](double v) { return std::cosh(v); }},
      {"Asinh", [](double v) { return std::asinh(v); }}, {"Acosh", [](double v) { return std::acosh(v); }},
      {"Atanh", [](double v) { return std::atanh(v); }}};
  auto x = test::random_floats(16, 5, -0.95f, 0.95f);
  for (const auto& [op, f] : ops) {
    OnnxBuilder b(13);
    b.input("x", {16});
    std::string in = "x";
    if (op == "Acosh") {  // its domain is [1, inf): x + 2
      b.initializer("two", {1}, {2});
      b.node("Add", {"x", "two"}, {"x2"});
      in = "x2";
    }
    b.node(op, {in}, {"y"});
    b.output("y");
    auto y = test::run_graph(import_onnx_bytes(b.bytes()), {x});
    for (size_t i = 0; i < x.size(); ++i) {
      float xi = op == "Acosh" ? x[i] + 2.0f : x[i];
      EXPECT_EQ(y[i], static_cast<float>(f(xi))) << op << " " << xi;
    }
  }
}

// A shape input computed from a given input value (HannWindow's expanded form casts its
// size to float before Range) is evaluated at import.
TEST(OnnxIndexOps, ShapeFromAComputedValue) {
  OnnxBuilder b(13);
  b.input("n", {}, onnx::TensorProto::INT64);
  b.initializer("zero", {}, {0});
  b.initializer("one", {}, {1});
  auto* cast = b.node("Cast", {"n"}, {"nf"});
  OnnxBuilder::attr(cast, "to", int64_t{onnx::TensorProto::FLOAT});
  b.node("Range", {"zero", "nf", "one"}, {"y"}, "range1");
  b.output("y");
  OnnxOptions opt;
  auto n = std::make_shared<interp::HostBuffer>(ir::DataType::Int(64), std::vector<int64_t>{});
  n->set_int(0, 5);
  opt.input_values["n"] = n;
  Graph g = import_onnx_bytes(b.bytes(), opt);
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{5}));
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("node 'range1' (Range"), std::string::npos) << e;
  EXPECT_NE(e.find("must be a constant"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln::frontend
