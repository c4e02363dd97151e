// Sequences, optionals and control flow, resolved while importing
// (compiler/frontend/onnx/seqflow_converters.cc): loops unrolled for known trip
// counts, If branches picked or selected, sequences as lists of tensors, and the errors
// when something they need is only known at run time.
#include <gtest/gtest.h>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/e2e/onnx_import_util.h"
#include "tests/e2e/test_util.h"

namespace kiln::frontend {
namespace {

using graph::ConstData;
using graph::Graph;
using test::OnnxBuilder;
using test::count_op;
using test::import_error;



ConstData scalar_value(ir::DataType t, int64_t v) {
  auto b = std::make_shared<interp::HostBuffer>(t, std::vector<int64_t>{});
  b->set_int(0, v);
  return b;
}

// Loop body: y += w (w from the enclosing graph), every y scanned out.
OnnxBuilder accumulate_body() {
  OnnxBuilder body;
  body.input("i", {}, onnx::TensorProto::INT64);
  body.input("cond_in", {}, onnx::TensorProto::BOOL);
  body.input("y_in", {2});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Add", {"y_in", "w"}, {"y_out"});
  body.node("Identity", {"y_out"}, {"scan"});
  body.output("cond_out");
  body.output("y_out");
  body.output("scan");
  return body;
}

OnnxBuilder accumulate_loop(bool trip_is_input) {
  OnnxBuilder b(13);
  b.input("y", {2});
  if (trip_is_input) b.input("m", {}, onnx::TensorProto::INT64);
  else b.initializer_i64("m", {}, {3});
  b.initializer("w", {2}, {1, 10});
  auto* l = b.node("Loop", {"m", "", "y"}, {"y_final", "ys"}, "loop");
  OnnxBuilder::attr(l, "body", accumulate_body());
  b.output("y_final");
  b.output("ys");
  return b;
}

TEST(OnnxControlFlow, LoopIsUnrolledForAKnownTripCount) {
  Graph g = import_onnx_bytes(accumulate_loop(false).bytes());
  EXPECT_EQ(count_op(g, "add"), 3);
  EXPECT_EQ(g.type(g.outputs()[1]).shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(test::run_graph(g, {{0.5f, 1}}, "interp", {}, 0), (std::vector<float>{3.5f, 31}));
  EXPECT_EQ(test::run_graph(g, {{0.5f, 1}}, "interp", {}, 1), (std::vector<float>{1.5f, 11, 2.5f, 21, 3.5f, 31}));
}

TEST(OnnxControlFlow, TripCountFromAGivenInputValue) {
  OnnxOptions opt;
  opt.input_values["m"] = scalar_value(ir::DataType::Int(64), 2);
  Graph g = import_onnx_bytes(accumulate_loop(true).bytes(), opt);
  EXPECT_EQ(count_op(g, "add"), 2);
  EXPECT_EQ(g.type(g.outputs()[1]).shape, (std::vector<int64_t>{2, 2}));
}

TEST(OnnxControlFlowErrors, TripCountAtRunTime) {
  std::string e = import_error(accumulate_loop(true).bytes());
  EXPECT_NE(e.find("node 'loop' (Loop"), std::string::npos) << e;
  EXPECT_NE(e.find("the trip count M ('m') is computed at run time"), std::string::npos) << e;
}

TEST(OnnxControlFlowErrors, LoopConditionAtRunTime) {
  OnnxBuilder body;
  body.input("i", {}, onnx::TensorProto::INT64);
  body.input("cond_in", {}, onnx::TensorProto::BOOL);
  body.input("y_in", {});
  body.node("Equal", {"y_in", "y_in"}, {"cond_out"}, "stop_test");
  body.node("Identity", {"y_in"}, {"y_out"});
  body.output("cond_out");
  body.output("y_out");
  OnnxBuilder b(13);
  b.input("y", {});
  b.initializer_i64("m", {}, {4});
  auto* l = b.node("Loop", {"m", "", "y"}, {"y_final"}, "loop");
  OnnxBuilder::attr(l, "body", body);
  b.output("y_final");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("node 'loop' (Loop"), std::string::npos) << e;
  EXPECT_NE(e.find("the body's condition output (iteration 0) is computed at run time"), std::string::npos) << e;
}

// A running sum over the rows of x, taken last row first, its states stacked along
// axis 1.
TEST(OnnxControlFlow, ScanIsUnrolledAlongItsAxis) {
  OnnxBuilder body;
  body.input("s_in", {2});
  body.input("x_t", {2});
  body.node("Add", {"s_in", "x_t"}, {"s_out"});
  body.node("Identity", {"s_out"}, {"scan_out"});
  body.output("s_out");
  body.output("scan_out");
  OnnxBuilder b(13);
  b.input("init", {2});
  b.input("x", {3, 2});
  auto* n = b.node("Scan", {"init", "x"}, {"s", "states"}, "scan");
  OnnxBuilder::attr(n, "num_scan_inputs", int64_t{1});
  OnnxBuilder::attr(n, "scan_input_directions", std::vector<int64_t>{1});
  OnnxBuilder::attr(n, "scan_output_axes", std::vector<int64_t>{1});
  OnnxBuilder::attr(n, "body", body);
  b.output("s");
  b.output("states");
  Graph g = import_onnx_bytes(b.bytes());
  std::vector<std::vector<float>> in{{0, 0}, {1, 2, 3, 4, 5, 6}};
  EXPECT_EQ(test::run_graph(g, in, "interp", {}, 0), (std::vector<float>{9, 12}));
  EXPECT_EQ(g.type(g.outputs()[1]).shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(test::run_graph(g, in, "interp", {}, 1), (std::vector<float>{5, 8, 9, 6, 10, 12}));
}

// Loops nested three deep, 4096 iterations each, would unroll to 2^36 bodies: refused.
TEST(OnnxControlFlowErrors, NestedLoopsThatUnrollTooFar) {
  auto loop_body = [](const OnnxBuilder* inner) {
    OnnxBuilder body;
    body.input("i", {}, onnx::TensorProto::INT64);
    body.input("cond_in", {}, onnx::TensorProto::BOOL);
    body.input("y_in", {2});
    body.node("Identity", {"cond_in"}, {"cond_out"});
    if (inner) OnnxBuilder::attr(body.node("Loop", {"m", "", "y_in"}, {"y_out"}, "inner"), "body", *inner);
    else body.node("Add", {"y_in", "w"}, {"y_out"});
    body.output("cond_out");
    body.output("y_out");
    return body;
  };
  OnnxBuilder innermost = loop_body(nullptr);
  OnnxBuilder middle = loop_body(&innermost);
  OnnxBuilder outer = loop_body(&middle);
  OnnxBuilder b(13);
  b.input("y", {2});
  b.initializer_i64("m", {}, {4096});
  b.initializer("w", {2}, {1, 10});
  OnnxBuilder::attr(b.node("Loop", {"m", "", "y"}, {"y_final"}, "loop"), "body", outer);
  b.output("y_final");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("the model unrolls to more than 262144 nodes"), std::string::npos) << e;
}

// then: x + 1; else: x * 2 (or a Flatten to another shape).
OnnxBuilder if_model(bool else_reshapes) {
  OnnxBuilder then_b, else_b;
  then_b.node("Add", {"x", "one"}, {"t"});
  then_b.output("t");
  if (else_reshapes) {
    OnnxBuilder::attr(else_b.node("Flatten", {"x"}, {"e"}), "axis", int64_t{0});
  } else {
    else_b.node("Mul", {"x", "two"}, {"e"});
  }
  else_b.output("e");
  OnnxBuilder b(13);
  b.input("c", {}, onnx::TensorProto::BOOL);
  b.input("x", {2, 2});
  b.initializer("one", {}, {1});
  b.initializer("two", {}, {2});
  auto* n = b.node("If", {"c"}, {"y"}, "if");
  OnnxBuilder::attr(n, "then_branch", then_b);
  OnnxBuilder::attr(n, "else_branch", else_b);
  b.output("y");
  return b;
}

TEST(OnnxControlFlow, IfTakesTheBranchOfAKnownCondition) {
  for (bool c : {true, false}) {
    OnnxOptions opt;
    opt.input_values["c"] = scalar_value(ir::DataType::Bool(), c);
    Graph g = import_onnx_bytes(if_model(true).bytes(), opt);
    EXPECT_EQ(count_op(g, "add"), c ? 1 : 0);
    EXPECT_EQ(g.type(g.outputs()[0]).shape, c ? (std::vector<int64_t>{2, 2}) : (std::vector<int64_t>{1, 4}));
  }
}

TEST(OnnxControlFlow, IfOnARunTimeConditionSelectsElementwise) {
  Graph g = import_onnx_bytes(if_model(false).bytes());
  EXPECT_EQ(count_op(g, "add"), 1);
  EXPECT_EQ(count_op(g, "multiply"), 1);
  EXPECT_EQ(count_op(g, "where"), 1);
}

TEST(OnnxControlFlowErrors, RunTimeConditionWithBranchesOfDifferentShapes) {
  std::string e = import_error(if_model(true).bytes());
  EXPECT_NE(e.find("node 'if' (If"), std::string::npos) << e;
  EXPECT_NE(e.find("the condition is computed at run time"), std::string::npos) << e;
  EXPECT_NE(e.find("output 0 differs between the branches: float32[2, 2] and float32[1, 4]"), std::string::npos) << e;
}

// x [6] split into chunks of 2, the middle one erased, the rest concatenated.
TEST(OnnxSequences, SplitEraseConcat) {
  OnnxBuilder b(13);
  b.input("x", {6});
  b.initializer_i64("two", {}, {2});
  b.initializer_i64("pos", {}, {-2});
  b.node("SplitToSequence", {"x", "two"}, {"s"});
  b.node("SequenceErase", {"s", "pos"}, {"s2"});
  b.node("SequenceLength", {"s2"}, {"n"});
  auto* cat = b.node("ConcatFromSequence", {"s2"}, {"y"});
  OnnxBuilder::attr(cat, "axis", int64_t{0});
  b.output("y");
  b.output("n");
  Graph g = import_onnx_bytes(b.bytes());
  EXPECT_EQ(test::run_graph(g, {{0, 1, 2, 3, 4, 5}}, "interp", {}, 0), (std::vector<float>{0, 1, 4, 5}));
  const auto& n = g.node(g.outputs()[1]);
  ASSERT_TRUE(n.is_constant());
  EXPECT_EQ(graph::constant_ints(n), (std::vector<int64_t>{2}));
}

// A sequence input is one graph input per element; a sequence output one output each.
TEST(OnnxSequences, SequenceInputsAndOutputsAreListsOfTensors) {
  OnnxBuilder b(13);
  b.sequence_input("s");
  b.input("x", {3});
  b.node("SequenceInsert", {"s", "x"}, {"t"});
  b.output("t");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("input 's' is a sequence: give the shapes of its elements"), std::string::npos) << e;

  OnnxOptions opt;
  opt.sequence_shapes["s"] = {{3}, {3}};
  Graph g = import_onnx_bytes(b.bytes(), opt);
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.node(g.inputs()[1]).name, "s[1]");
  EXPECT_EQ(g.output_names(), (std::vector<std::string>{"t[0]", "t[1]", "t[2]"}));
}

TEST(OnnxSequencesErrors, PositionOutOfRangeAndTensorExpected) {
  OnnxBuilder b(13);
  b.input("x", {2});
  b.initializer_i64("five", {}, {5});
  b.node("SequenceConstruct", {"x", "x"}, {"s"});
  b.node("SequenceAt", {"s", "five"}, {"y"}, "at");
  b.output("y");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("node 'at' (SequenceAt"), std::string::npos) << e;
  EXPECT_NE(e.find("position 5 is out of range for a sequence of 2 tensors"), std::string::npos) << e;

  OnnxBuilder r(13);
  r.input("x", {2});
  r.node("SequenceConstruct", {"x"}, {"s"});
  r.node("Relu", {"s"}, {"y"}, "relu");
  r.output("y");
  e = import_error(r.bytes());
  EXPECT_NE(e.find("node 'relu' (Relu"), std::string::npos) << e;
  EXPECT_NE(e.find("input 0 ('s') is a sequence of 1 tensors; Relu takes a tensor there"), std::string::npos) << e;
}

TEST(OnnxOptionals, EmptyAndPresent) {
  OnnxBuilder b(15);
  b.input("x", {2});
  b.node("Optional", {"x"}, {"o"});
  b.node("OptionalHasElement", {"o"}, {"has"});
  b.node("OptionalGetElement", {"o"}, {"y"});
  b.output("has");
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes());
  EXPECT_EQ(graph::constant_ints(g.node(g.outputs()[0])), (std::vector<int64_t>{1}));
  EXPECT_EQ(g.outputs()[1], g.inputs()[0]);

  OnnxBuilder empty(15);
  empty.input("x", {2});
  auto* o = empty.node("Optional", {}, {"o"});
  auto* a = o->add_attribute();
  a->set_name("type");
  a->set_type(onnx::AttributeProto::TYPE_PROTO);
  a->mutable_tp()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  empty.node("OptionalGetElement", {"o"}, {"y"}, "get");
  empty.output("y");
  std::string e = import_error(empty.bytes());
  EXPECT_NE(e.find("node 'get' (OptionalGetElement"), std::string::npos) << e;
  EXPECT_NE(e.find("the optional input 'o' is empty"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln::frontend
