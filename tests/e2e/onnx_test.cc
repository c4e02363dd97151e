// The ONNX frontend: models built here with the ONNX protobuf API, imported, checked
// for structure and run through the interpreter; malformed models give clear errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

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



// conv (bias) -> batch norm -> relu -> max pool -> global pool -> flatten -> gemm.
OnnxBuilder small_cnn() {
  OnnxBuilder b(13);
  b.input("x", {-1, 3, 8, 8});
  b.initializer("w", {4, 3, 3, 3}, test::random_floats(108, 1));
  b.initializer("b", {4}, test::random_floats(4, 2));
  b.initializer("gamma", {4}, test::random_floats(4, 3, 0.5, 1.5));
  b.initializer("beta", {4}, test::random_floats(4, 4));
  b.initializer("mean", {4}, test::random_floats(4, 5));
  b.initializer("var", {4}, test::random_floats(4, 6, 0.5, 2));
  b.initializer("fc_w", {5, 4}, test::random_floats(20, 7));
  b.initializer("fc_b", {5}, test::random_floats(5, 8));
  auto* c = b.node("Conv", {"x", "w", "b"}, {"c"}, "conv1");
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{3, 3});
  b.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn"}, "bn1");
  b.node("Relu", {"bn"}, {"r"});
  auto* p = b.node("MaxPool", {"r"}, {"p"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p, "strides", std::vector<int64_t>{2, 2});
  b.node("GlobalAveragePool", {"p"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  auto* gm = b.node("Gemm", {"f", "fc_w", "fc_b"}, {"y"});
  OnnxBuilder::attr(gm, "transB", int64_t{1});
  b.output("y");
  return b;
}

TEST(OnnxImport, SmallCnn) {
  Graph g = import_onnx_bytes(small_cnn().bytes());
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.type(g.inputs()[0]).shape, (std::vector<int64_t>{1, 3, 8, 8}));  // symbolic batch = 1
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(count_op(g, "conv2d"), 1);
  EXPECT_EQ(count_op(g, "batch_norm"), 1);
  EXPECT_EQ(count_op(g, "dense"), 1);
  // transB=1: the weight is used as is; no transpose was needed.
  EXPECT_EQ(count_op(g, "transpose"), 0);
  auto x = test::random_floats(192, 9);
  auto opt = test::run_graph(g, {x});
  auto plain = test::run_graph(g, {x}, "interp", {false, false});
  EXPECT_LT(test::rel_error(opt, plain), 1e-5);
}

TEST(OnnxImport, ShapeArithmeticIsFolded) {
  // PyTorch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
  OnnxBuilder b(13);
  b.input("x", {2, 3, 4});
  b.initializer_i64("zero", {}, {0});
  b.initializer_i64("axes0", {1}, {0});
  b.initializer_i64("minus1", {1}, {-1});
  b.node("Shape", {"x"}, {"s"});
  auto* ga = b.node("Gather", {"s", "zero"}, {"n"});
  OnnxBuilder::attr(ga, "axis", int64_t{0});
  b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  auto* cc = b.node("Concat", {"n1", "minus1"}, {"shape"});
  OnnxBuilder::attr(cc, "axis", int64_t{0});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes());
  EXPECT_EQ(g.num_ops(), 1) << g;  // only the reshape runs
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{2, 12}));
}

TEST(OnnxImport, SliceSplitSqueezeAcrossOpsets) {
  for (int opset : {11, 13}) {
    OnnxBuilder b(opset);
    b.input("x", {4, 6});
    b.initializer_i64("starts", {1}, {-1});
    b.initializer_i64("ends", {1}, {-100});
    b.initializer_i64("axes", {1}, {1});
    b.initializer_i64("steps", {1}, {-2});
    b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});  // columns 5, 3, 1
    auto* sp = b.node("Split", {"s"}, {"a", "b"});
    OnnxBuilder::attr(sp, "axis", int64_t{0});
    if (opset == 11) {
      auto* u = b.node("Unsqueeze", {"a"}, {"u"});
      OnnxBuilder::attr(u, "axes", std::vector<int64_t>{0});
    } else {
      b.initializer_i64("uaxes", {1}, {0});
      b.node("Unsqueeze", {"a", "uaxes"}, {"u"});
    }
    b.node("Squeeze", {"u"}, {"q"});
    b.node("Add", {"q", "b"}, {"y"});
    b.output("y");
    Graph g = import_onnx_bytes(b.bytes());
    ASSERT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{2, 3})) << opset;
    std::vector<float> x(24);
    for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i);
    std::vector<float> ref;
    for (int r = 0; r < 2; ++r)
      for (int c : {5, 3, 1}) ref.push_back(x[r * 6 + c] + x[(r + 2) * 6 + c]);
    EXPECT_EQ(test::run_graph(g, {x}), ref) << opset;
  }
}

TEST(OnnxImport, LayerNormAndGelu) {
  OnnxBuilder b(17);
  b.input("x", {2, 8});
  auto gamma = test::random_floats(8, 1, 0.5, 1.5), beta = test::random_floats(8, 2);
  b.initializer("g", {8}, gamma);
  b.initializer("bias", {8}, beta);
  auto* ln = b.node("LayerNormalization", {"x", "g", "bias"}, {"l"});
  OnnxBuilder::attr(ln, "epsilon", 1e-5f);
  b.node("Erf", {"l"}, {"y"});
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes());
  auto x = test::random_floats(16, 3, -2, 2);
  auto out = test::run_graph(g, {x});
  for (int r = 0; r < 2; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 8; ++i) m += x[r * 8 + i] / 8.0;
    for (int i = 0; i < 8; ++i) v += (x[r * 8 + i] - m) * (x[r * 8 + i] - m) / 8.0;
    for (int i = 0; i < 8; ++i) {
      double ref = std::erf((x[r * 8 + i] - m) / std::sqrt(v + 1e-5) * gamma[i] + beta[i]);
      EXPECT_NEAR(out[r * 8 + i], ref, 2e-6);
    }
  }
}

TEST(OnnxErrors, TruncatedFile) {
  std::string bytes = small_cnn().bytes();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{5}}) {
    std::string e = import_error(bytes.substr(0, cut));
    EXPECT_NE(e.find("model.onnx"), std::string::npos) << e;
    EXPECT_FALSE(e.empty()) << "cut at " << cut;
  }
  EXPECT_NE(import_error("").find("empty"), std::string::npos);
  EXPECT_NE(import_error("this is not a protobuf at all").find("not a valid ONNX model"), std::string::npos);
}

TEST(OnnxErrors, AllUnsupportedOpsInOneMessage) {
  OnnxBuilder b(13);
  b.input("x", {1, 4});
  b.node("Relu", {"x"}, {"a"});
  b.node("NonMaxSuppression", {"a"}, {"b"}, "nms");
  b.node("TfIdfVectorizer", {"b"}, {"c"}, "tfidf1");
  b.node("TfIdfVectorizer", {"c"}, {"d"}, "tfidf2");
  b.output("d");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("2 unsupported operators (opset 13)"), std::string::npos) << e;
  EXPECT_NE(e.find("TfIdfVectorizer (2 nodes: 'tfidf1', 'tfidf2')"), std::string::npos) << e;
  EXPECT_NE(e.find("NonMaxSuppression (1 node: 'nms')"), std::string::npos) << e;
}

TEST(OnnxErrors, ShapeMismatchNamesTheNode) {
  OnnxBuilder b(13);
  b.input("x", {1, 3, 8, 8});
  b.initializer("w", {4, 2, 3, 3}, test::random_floats(72, 1));
  b.node("Conv", {"x", "w"}, {"y"}, "conv7");
  b.output("y");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("model.onnx: node 'conv7' (Conv, opset 13)"), std::string::npos) << e;
  EXPECT_NE(e.find("weight expects 2 input channels, data has 3"), std::string::npos) << e;
}

// Older opsets go through ONNX's version converter and its shape inference, which
// dereferences null on a convolution of rank-2 data (also behind a Relu): Kiln refuses
// it by name before. A weight whose rank differs is named too. (From opset 11 on the
// importer's own checks name these.)
TEST(OnnxErrors, WindowedOpsOfLowRankData) {
  for (bool through_relu : {false, true}) {
    OnnxBuilder b(10);
    b.input("x", {1, 8});
    b.initializer("w", {4, 3, 3, 3}, test::random_floats(108, 1));
    std::string data = "x";
    if (through_relu) {
      b.node("Relu", {"x"}, {"r"});
      data = "r";
    }
    b.node("Conv", {data, "w"}, {"y"}, "conv_low");
    b.output("y");
    std::string e = import_error(b.bytes());
    EXPECT_NE(e.find("node 'conv_low' (Conv) needs data of rank 3 or more"), std::string::npos) << e;
  }
  OnnxBuilder pool(10);
  pool.input("x", {2, 8});
  OnnxBuilder::attr(pool.node("MaxPool", {"x"}, {"y"}, "pool_low"), "kernel_shape", std::vector<int64_t>{2});
  pool.output("y");
  std::string e = import_error(pool.bytes());
  EXPECT_NE(e.find("node 'pool_low' (MaxPool) needs data of rank 3"), std::string::npos) << e;
  OnnxBuilder mixed(10);
  mixed.input("x", {1, 3, 8, 8});
  mixed.initializer("w", {4, 3, 3}, test::random_floats(36, 1));
  mixed.node("Conv", {"x", "w"}, {"y"}, "conv_mixed");
  mixed.output("y");
  e = import_error(mixed.bytes());
  EXPECT_NE(e.find("the weight 'w' has rank 3, the data 'x' rank 4"), std::string::npos) << e;
}

// Found by tests/fuzz/onnx_fuzz: before opset 9, ONNX's shape inference of Gemm reads
// dimensions 0 and 1 of its operands unchecked (a null dereference in libonnx for a
// scalar), and the conversion gave an input declared without a shape an empty one, a
// scalar. Both are refused by name before ONNX's inference runs.
TEST(OnnxErrors, OldGemmOfNonMatricesAndInputsWithoutAShape) {
  auto gemm = [](const std::vector<int64_t>& x) {
    OnnxBuilder b(6);
    b.input("x", x);
    b.initializer("w", {8, 4}, std::vector<float>(32, 1.0f));
    b.initializer("c", {4}, std::vector<float>(4, 1.0f));
    b.node("Gemm", {"x", "w", "c"}, {"y"}, "gemm6");
    b.output("y");
    return b;
  };
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{}, {8}, {1, 1, 8}}) {
    std::string e = import_error(gemm(x).bytes());
    EXPECT_NE(e.find(fmt::format("node 'gemm6' (Gemm) multiplies matrices, but input 0 ('x') has rank {}", x.size())),
              std::string::npos)
        << e;
  }
  OnnxBuilder unshaped = gemm({1, 8});
  unshaped.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  std::string e = import_error(unshaped.bytes());
  EXPECT_NE(e.find("input 'x' has no shape; give one"), std::string::npos) << e;
  Graph g = import_onnx_bytes(gemm({1, 8}).bytes());
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{1, 4}));
}

// Opset 9 is brought to 11 by ONNX's version converter: Upsample becomes Resize,
// Relu stays; the model imports.
TEST(OnnxImport, OldOpsetIsConverted) {
  OnnxBuilder old(9);
  old.input("x", {2, 2});
  old.node("Relu", {"x"}, {"y"});
  old.output("y");
  Graph g = import_onnx_bytes(old.bytes());
  EXPECT_EQ(count_op(g, "relu"), 1);
  auto x = test::random_floats(4, 3);
  auto y = test::run_graph(g, {x});
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], std::max(x[i], 0.0f));
}

// A shape computed from an input is read from the value given for it.
TEST(OnnxImport, ShapeFromAGivenInputValue) {
  OnnxBuilder b(13);
  b.input("x", {2, 6});
  b.input("s", {2}, onnx::TensorProto::INT64);
  b.node("Reshape", {"x", "s"}, {"y"}, "r");
  b.output("y");
  OnnxOptions opt;
  auto s = std::make_shared<interp::HostBuffer>(ir::DataType::Int(64), std::vector<int64_t>{2});
  s->set_int(0, 3);
  s->set_int(1, 4);
  opt.input_values["s"] = s;
  Graph g = import_onnx_bytes(b.bytes(), opt);
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{3, 4}));
}

// Found by tests/fuzz/onnx_fuzz: x @ W with a constant W and an empty inner dimension
// divided x's size by that dimension (zero). The sum over nothing is zero.
TEST(OnnxImport, MatMulOverAnEmptyDimension) {
  OnnxBuilder b(13);
  b.input("x", {2, 0});
  b.initializer("w", {0, 3}, {});
  b.node("MatMul", {"x", "w"}, {"y"}, "matmul0");
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes());
  ASSERT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(test::run_graph(g, {{}}), std::vector<float>(6, 0.0f));
}

// Variadic Max and Min take every operand (three here), with broadcasting.
TEST(OnnxImport, VariadicMaxMin) {
  for (std::string op : {"Max", "Min"}) {
    OnnxBuilder b(13);
    b.input("a", {3});
    b.input("c", {3});
    b.input("d", {1});
    b.node(op, {"a", "c", "d"}, {"y"});
    b.output("y");
    Graph g = import_onnx_bytes(b.bytes());
    std::vector<float> a{3, 2, 1}, c{1, 3, 2}, d{2};
    auto y = test::run_graph(g, {a, c, d});
    std::vector<float> want = op == "Max" ? std::vector<float>{3, 3, 2} : std::vector<float>{1, 2, 1};
    EXPECT_EQ(y, want) << op;
  }
}

TEST(OnnxErrors, MissingValuesAndBadOpsets) {
  OnnxBuilder b(13);
  b.input("x", {2, 2});
  b.node("Add", {"x", "nowhere"}, {"y"}, "add1");
  b.output("y");
  std::string e = import_error(b.bytes());
  EXPECT_NE(e.find("input 1 ('nowhere') is not produced by any node"), std::string::npos) << e;

  OnnxBuilder future(99);
  future.input("x", {2, 2});
  future.node("Relu", {"x"}, {"y"});
  future.output("y");
  e = import_error(future.bytes());
  EXPECT_NE(e.find("opset 99 is newer than the newest"), std::string::npos) << e;

  OnnxBuilder dyn(13);
  dyn.input("x", {2, 6});
  dyn.input("s", {2}, onnx::TensorProto::INT64);
  dyn.node("Reshape", {"x", "s"}, {"y"}, "r");
  dyn.output("y");
  e = import_error(dyn.bytes());
  EXPECT_NE(e.find("must be a constant"), std::string::npos) << e;

  OnnxBuilder bad_init(13);
  bad_init.input("x", {2});
  bad_init.initializer("w", {3}, {1, 2});
  bad_init.node("Add", {"x", "w"}, {"y"});
  bad_init.output("y");
  e = import_error(bad_init.bytes());
  EXPECT_NE(e.find("initializer 'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("2 values for shape [3]"), std::string::npos) << e;
}

// Found by tests/fuzz/onnx_fuzz: Split added its sizes with std::accumulate, which
// overflows int64 (undefined behaviour) for sizes near INT64_MAX. Sizes that are
// negative or do not add up to the dimension are refused, naming the node.
TEST(OnnxErrors, SplitSizesThatDoNotAddUpNameTheNode) {
  const std::vector<std::vector<int64_t>> cases = {
      {7598819836139995138, 8241980317952140666}, {INT64_MAX, INT64_MAX}, {-2, 8}, {4, 5}, {2, 2}};
  for (const std::vector<int64_t>& sizes : cases) {
    std::string want = fmt::format("split sizes [{}] do not add up to dimension 0 (6)", fmt::join(sizes, ", "));
    for (int opset : {11, 13}) {
      OnnxBuilder b(opset);
      b.input("x", {6, 2});
      onnx::NodeProto* split = nullptr;
      if (opset >= 13) {
        b.initializer_i64("sizes", {2}, sizes);
        split = b.node("Split", {"x", "sizes"}, {"a", "b"}, "split1");
      } else {
        split = b.node("Split", {"x"}, {"a", "b"}, "split1");
        OnnxBuilder::attr(split, "split", sizes);
      }
      b.output("a");
      b.output("b");
      std::string e = import_error(b.bytes());
      EXPECT_NE(e.find(fmt::format("node 'split1' (Split, opset {})", opset)), std::string::npos) << e;
      EXPECT_NE(e.find(want), std::string::npos) << e;
    }
    OnnxBuilder seq(13);
    seq.input("x", {6, 2});
    seq.initializer_i64("sizes", {2}, sizes);
    seq.node("SplitToSequence", {"x", "sizes"}, {"s"}, "to_seq");
    auto* cat = seq.node("ConcatFromSequence", {"s"}, {"y"});
    OnnxBuilder::attr(cat, "axis", int64_t{0});
    seq.output("y");
    std::string e = import_error(seq.bytes());
    EXPECT_NE(e.find("node 'to_seq' (SplitToSequence"), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
  }
  OnnxBuilder none(13);
  none.input("x", {6, 2});
  none.node("Split", {"x"}, {}, "split0");
  none.node("Relu", {"x"}, {"y"});
  none.output("y");
  std::string e = import_error(none.bytes());
  EXPECT_NE(e.find("node 'split0' (Split, opset 13): no outputs"), std::string::npos) << e;
}

// Found by tests/fuzz/onnx_fuzz: Clip's min of no values was read with .at(0), a
// std::out_of_range instead of an error naming the node. Every scalar operand read
// while importing holds one value; Range and OneHot, whose scalars size a constant or a
// dimension, refuse sizes Kiln cannot make, and integer Range is exact near INT64_MAX.
TEST(OnnxErrors, ScalarOperandsHoldOneValue) {
  auto error = [](const std::string& op, const std::vector<std::string>& in, auto&& add_inputs) {
    OnnxBuilder b(13);
    b.input("x", {2, 2});
    add_inputs(b);
    b.node(op, in, {"y"}, "n0");
    b.output("y");
    return import_error(b.bytes());
  };
  std::string e = error("Clip", {"x", "lo"}, [](OnnxBuilder& b) { b.initializer("lo", {0}, {}); });
  EXPECT_NE(e.find("node 'n0' (Clip, opset 13): min (input 1) must hold one value, it holds 0"), std::string::npos) << e;
  e = error("Pad", {"x", "pads", "v"}, [](OnnxBuilder& b) {
    b.initializer_i64("pads", {4}, {0, 0, 1, 1});
    b.initializer("v", {2}, {1, 2});
  });
  EXPECT_NE(e.find("constant_value (input 2) must hold one value, it holds 2"), std::string::npos) << e;
  e = error("OneHot", {"x", "depth", "values"}, [](OnnxBuilder& b) {
    b.initializer("depth", {}, {0x1p41f});
    b.initializer("values", {2}, {0, 1});
  });
  EXPECT_NE(e.find("node 'n0' (OneHot, opset 13): depth 2199023255552 is not from 1 to 2^40"), std::string::npos) << e;

  auto range = [](auto&& add_bounds) {
    OnnxBuilder b(13);
    add_bounds(b);
    b.node("Range", {"start", "limit", "delta"}, {"y"}, "range0");
    b.output("y");
    return b;
  };
  e = import_error(range([](OnnxBuilder& b) {
                     b.initializer("start", {}, {0});
                     b.initializer("limit", {}, {1});
                     b.initializer("delta", {}, {0x1p-30f});
                   }).bytes());
  EXPECT_NE(e.find("node 'range0' (Range, opset 13): the output would have 1073741824 elements, more than the 4194304"),
            std::string::npos)
      << e;
  e = import_error(range([](OnnxBuilder& b) {
                     b.initializer_i64("start", {}, {INT64_MIN});
                     b.initializer_i64("limit", {}, {INT64_MAX});
                     b.initializer_i64("delta", {}, {1});
                   }).bytes());
  EXPECT_NE(e.find("more than the 4194304 Kiln makes while importing"), std::string::npos) << e;
  Graph g = import_onnx_bytes(range([](OnnxBuilder& b) {
                                b.initializer_i64("start", {}, {INT64_MAX - 2});
                                b.initializer_i64("limit", {}, {INT64_MAX});
                                b.initializer_i64("delta", {}, {1});
                              }).bytes());
  const graph::Node& y = g.node(g.outputs()[0]);
  ASSERT_TRUE(y.is_constant());
  EXPECT_EQ(graph::constant_ints(y), (std::vector<int64_t>{INT64_MAX - 2, INT64_MAX - 1}));
}

// Dropout in training mode drops at random, except with a ratio of 0 (PyTorch exports
// that for torchvision's Swin Transformer): that one is the identity, the others an
// error that says what to do. The ONNX conformance cases test_training_dropout_zero_ratio*
// check the identity's values and mask.
TEST(OnnxErrors, DropoutInTrainingModeOnlyWithARatioOfZero) {
  auto model = [](const std::vector<float>& ratio) {
    OnnxBuilder b(13);
    b.input("x", {2, 3});
    std::vector<std::string> in{"x", ratio.empty() ? "" : "ratio", "training"};
    if (!ratio.empty()) b.initializer("ratio", {}, ratio);
    b.initializer_bool("training", {}, {true});
    b.node("Dropout", in, {"y"}, "drop0");
    b.output("y");
    return b.bytes();
  };
  Graph g = import_onnx_bytes(model({0}));
  EXPECT_EQ(count_op(g, "dropout"), 1) << g;
  std::string e = import_error(model({0.25f}));
  EXPECT_NE(e.find("node 'drop0' (Dropout, opset 13): training_mode=true with ratio 0.25 drops elements at random"),
            std::string::npos)
      << e;
  e = import_error(model({}));  // the ratio's default, 0.5
  EXPECT_NE(e.find("training_mode=true with ratio 0.5 drops"), std::string::npos) << e;
}

// Random byte flips and truncations of a valid model: each import either succeeds or
// throws a CompileError; nothing else (no crash, no other exception).
TEST(OnnxErrors, CorruptedBytesNeverCrash) {
  // A model that is mostly structure (attributes, shapes, names), little weight data.
  OnnxBuilder b(13);
  b.input("x", {1, 2, 6, 6});
  b.initializer("w", {2, 2, 1, 1}, {1, 2, 3, 4});
  b.initializer_i64("starts", {2}, {0, 1});
  b.initializer_i64("ends", {2}, {2, 5});
  b.initializer_i64("axes", {2}, {1, 3});
  b.initializer_i64("shape", {2}, {1, -1});
  auto* c = b.node("Conv", {"x", "w"}, {"c"});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{0, 0, 0, 0});
  auto* p = b.node("MaxPool", {"c"}, {"p"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p, "auto_pad", std::string("SAME_UPPER"));
  b.node("Slice", {"p", "starts", "ends", "axes"}, {"s"});
  auto* cc = b.node("Concat", {"s", "s"}, {"cat"});
  OnnxBuilder::attr(cc, "axis", int64_t{1});
  b.node("Reshape", {"cat", "shape"}, {"r"});
  auto* sm = b.node("Softmax", {"r"}, {"y"});
  OnnxBuilder::attr(sm, "axis", int64_t{-1});
  b.output("y");
  std::vector<std::string> models = {small_cnn().bytes(), b.bytes()};
  ASSERT_NO_THROW(import_onnx_bytes(models[1]));
  std::mt19937 rng(1234);
  int errors = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::string bytes = models[trial % 2];
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    if (trial % 5 == 0) bytes.resize(rng() % bytes.size());
    try {
      Graph g = import_onnx_bytes(bytes, {}, "fuzz.onnx");
      (void)g;
    } catch (const CompileError&) {
      errors++;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "trial " << trial << ": " << typeid(e).name() << ": " << e.what();
    }
  }
  EXPECT_GT(errors, 0);
}

// DFT and STFT (signal_converters.cc): a transform along the complex axis and a frame
// longer than the signal are errors that name the node and the reason.
TEST(OnnxErrors, SignalOperatorsNameTheProblem) {
  OnnxBuilder dft(17);
  dft.input("x", {1, 8, 1});
  OnnxBuilder::attr(dft.node("DFT", {"x"}, {"y"}, "dft0"), "axis", int64_t{2});
  dft.output("y");
  std::string e = import_error(dft.bytes());
  EXPECT_NE(e.find("node 'dft0' (DFT, opset 17)"), std::string::npos) << e;
  EXPECT_NE(e.find("axis 2 is out of range for rank 3"), std::string::npos) << e;

  OnnxBuilder stft(17);
  stft.input("x", {1, 8, 1});
  stft.initializer_i64("step", {}, {2});
  stft.initializer_i64("len", {}, {16});
  stft.node("STFT", {"x", "step", "", "len"}, {"y"}, "stft0");
  stft.output("y");
  e = import_error(stft.bytes());
  EXPECT_NE(e.find("node 'stft0' (STFT, opset 17)"), std::string::npos) << e;
  EXPECT_NE(e.find("frame_length 16 exceeds the signal's length 8"), std::string::npos) << e;
}

// GridSample (ops_image.cc): a mode ONNX does not define and a grid of the wrong shape
// are errors naming the node.
TEST(OnnxErrors, GridSampleNamesTheProblem) {
  OnnxBuilder mode(16);
  mode.input("x", {1, 1, 4, 4});
  mode.input("g", {1, 2, 2, 2});
  OnnxBuilder::attr(mode.node("GridSample", {"x", "g"}, {"y"}, "gs0"), "mode", std::string("cubic"));
  mode.output("y");
  std::string e = import_error(mode.bytes());
  EXPECT_NE(e.find("node 'gs0' (GridSample, opset 16)"), std::string::npos) << e;
  EXPECT_NE(e.find("mode 'cubic' is not one of bilinear, nearest, bicubic"), std::string::npos) << e;

  OnnxBuilder grid(16);
  grid.input("x", {1, 1, 4, 4});
  grid.input("g", {1, 2, 2, 3});
  grid.node("GridSample", {"x", "g"}, {"y"}, "gs1");
  grid.output("y");
  e = import_error(grid.bytes());
  EXPECT_NE(e.find("the grid is float32[1, 2, 2, 3]: [1, Ho, Wo, 2] expected"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln::frontend
