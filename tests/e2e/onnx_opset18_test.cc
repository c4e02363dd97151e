// Opsets 18 to 22, read by the converters themselves (libonnx 1.12 knows up to 17, and
// its conformance data too): each changed operator in its new form, against values
// worked out here; what Kiln refuses in them is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/e2e/onnx_import_util.h"
#include "tests/e2e/test_util.h"

namespace kiln::frontend {
namespace {

using test::OnnxBuilder;
using test::import_error;

// Attributes for the next run1, set by the test before calling it.
std::function<void(onnx::NodeProto*)> next_attrs;
void onnx_node_hook(onnx::NodeProto* n) {
  if (next_attrs) next_attrs(n);
  next_attrs = nullptr;
}

// One node on input "x" of `shape` (more inputs from initializers added by `init`),
// output "y"; run on `x` by the interpreter.
template <typename Init>
std::vector<float> run1(int opset, const std::string& op, std::vector<int64_t> shape, const std::vector<float>& x,
                        const std::vector<std::string>& inputs, Init&& init, std::vector<int64_t>* out_shape = nullptr) {
  OnnxBuilder b(opset);
  b.input("x", shape);
  init(b);
  onnx_node_hook(b.node(op, inputs, {"y"}, "n0"));
  b.output("y");
  graph::Graph g = import_onnx_bytes(b.bytes());
  if (out_shape) *out_shape = g.type(g.outputs()[0]).shape;
  return test::run_graph(g, {x});
}

auto none = [](OnnxBuilder&) {};

TEST(OnnxOpset18, ReductionsTakeTheirAxesAsAnInput) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "keepdims", int64_t{0}); };
  EXPECT_EQ(run1(18, "ReduceMean", {2, 3}, x, {"x", "axes"}, [](OnnxBuilder& b) { b.initializer_i64("axes", {1}, {1}); }),
            (std::vector<float>{2, 5}));
  EXPECT_EQ(run1(18, "ReduceMax", {2, 3}, x, {"x"}, none), (std::vector<float>{6}));  // no axes: all of them
  next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "noop_with_empty_axes", int64_t{1}); };
  EXPECT_EQ(run1(18, "ReduceL1", {2, 3}, x, {"x"}, none), x);
  EXPECT_EQ(run1(18, "ReduceSumSquare", {2, 3}, x, {"x", "axes"}, [](OnnxBuilder& b) { b.initializer_i64("axes", {1}, {0}); }),
            (std::vector<float>{17, 29, 45}));
  // Before 18 the axes are an attribute (and an input is not read).
  next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "axes", std::vector<int64_t>{0}); };
  EXPECT_EQ(run1(17, "ReduceMin", {2, 3}, x, {"x"}, none), (std::vector<float>{1, 2, 3}));
}

TEST(OnnxOpset18, SplitIntoNumOutputs) {
  OnnxBuilder b(18);
  b.input("x", {7});
  auto* n = b.node("Split", {"x"}, {"a", "b", "c"}, "split0");
  OnnxBuilder::attr(n, "num_outputs", int64_t{3});
  for (const char* o : {"a", "b", "c"}) b.output(o);
  graph::Graph g = import_onnx_bytes(b.bytes());
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.type(g.outputs()[0]).shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(g.type(g.outputs()[2]).shape, (std::vector<int64_t>{1}));
  EXPECT_EQ(test::run_graph(g, {{0, 1, 2, 3, 4, 5, 6}}, "interp", {}, 2), (std::vector<float>{6}));
  OnnxBuilder bad(18);
  bad.input("x", {5});
  n = bad.node("Split", {"x"}, {"a", "b", "c", "d"}, "split0");
  OnnxBuilder::attr(n, "num_outputs", int64_t{4});
  for (const char* o : {"a", "b", "c", "d"}) bad.output(o);
  std::string e = import_error(bad.bytes());
  EXPECT_NE(e.find("dimension 0 (5) leaves no elements for the last of 4 parts"), std::string::npos) << e;
}

TEST(OnnxOpset18, PadOfSomeAxesAndWrapping) {
  // Opset 18: pads for axis -1 only; opset 19: wrap mode.
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  std::vector<int64_t> shape;
  EXPECT_EQ(run1(
                18, "Pad", {2, 3}, x, {"x", "pads", "", "axes"},
                [](OnnxBuilder& b) {
                  b.initializer_i64("pads", {2}, {1, 0});
                  b.initializer_i64("axes", {1}, {-1});
                },
                &shape),
            (std::vector<float>{0, 1, 2, 3, 0, 4, 5, 6}));
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 4}));
  next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "mode", std::string("wrap")); };
  EXPECT_EQ(run1(19, "Pad", {2, 3}, x, {"x", "pads"}, [](OnnxBuilder& b) { b.initializer_i64("pads", {4}, {0, 2, 0, 1}); }),
            (std::vector<float>{2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4}));
  next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "mode", std::string("wrap")); };
  std::string e;
  try {
    run1(18, "Pad", {2, 3}, x, {"x", "pads"}, [](OnnxBuilder& b) { b.initializer_i64("pads", {4}, {0, 2, 0, 1}); });
  } catch (const CompileError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("pad mode 'wrap' is not supported (constant, edge, reflect, and wrap from opset 19)"), std::string::npos) << e;
}

TEST(OnnxOpset18, ResizeOfSomeAxesAndAspectRatios) {
  std::vector<float> x(2 * 4, 1.0f);  // [1, 1, 2, 4]
  std::vector<int64_t> shape;
  next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "axes", std::vector<int64_t>{2, 3}); };
  run1(18, "Resize", {1, 1, 2, 4}, x, {"x", "", "scales"}, [](OnnxBuilder& b) { b.initializer("scales", {2}, {2, 0.5}); },
       &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 1, 4, 2}));
  // Sizes as bounds on the last two axes: 2 / 2 and 6 / 4 -> one scale, 1 (not_larger)
  // or 1.5 (not_smaller).
  for (auto [policy, want] : {std::pair{"not_larger", std::vector<int64_t>{1, 1, 2, 4}},
                              std::pair{"not_smaller", std::vector<int64_t>{1, 1, 3, 6}}}) {
    next_attrs = [policy = std::string(policy)](onnx::NodeProto* n) {
      OnnxBuilder::attr(n, "axes", std::vector<int64_t>{2, 3});
      OnnxBuilder::attr(n, "keep_aspect_ratio_policy", policy);
    };
    run1(18, "Resize", {1, 1, 2, 4}, x, {"x", "", "", "sizes"}, [](OnnxBuilder& b) { b.initializer_i64("sizes", {2}, {2, 6}); },
         &shape);
    EXPECT_EQ(shape, want) << policy;
  }
  // half_pixel_symmetric (19): 1-d linear, 4 -> 3 by scale 0.8 (3.2 rounded down).
  next_attrs = [](onnx::NodeProto* n) {
    OnnxBuilder::attr(n, "mode", std::string("linear"));
    OnnxBuilder::attr(n, "coordinate_transformation_mode", std::string("half_pixel_symmetric"));
  };
  std::vector<float> got =
      run1(19, "Resize", {4}, {0, 1, 2, 3}, {"x", "", "scales"}, [](OnnxBuilder& b) { b.initializer("scales", {1}, {0.8f}); });
  // offset = 4 / 2 * (1 - 3 / 3.2) = 0.125; x_in = 0.125 + (i + 0.5) / 0.8 - 0.5.
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[static_cast<size_t>(i)], 0.125 + (i + 0.5) / 0.8 - 0.5, 1e-6) << i;
  next_attrs = [](onnx::NodeProto* n) {
    OnnxBuilder::attr(n, "mode", std::string("linear"));
    OnnxBuilder::attr(n, "antialias", int64_t{1});
  };
  std::string e;
  try {
    run1(18, "Resize", {4}, {0, 1, 2, 3}, {"x", "", "scales"}, [](OnnxBuilder& b) { b.initializer("scales", {1}, {0.5f}); });
  } catch (const CompileError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("antialias=1 when downsampling (linear mode) is not supported"), std::string::npos) << e;
}

TEST(OnnxOpset18, MishGeluAndGroupNormalization) {
  const std::vector<float> x = {-2, -0.5f, 0, 0.5f, 1, 3};
  std::vector<float> mish = run1(18, "Mish", {6}, x, {"x"}, none);
  std::vector<float> gelu = run1(20, "Gelu", {6}, x, {"x"}, none);
  next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "approximate", std::string("tanh")); };
  std::vector<float> gelu_tanh = run1(20, "Gelu", {6}, x, {"x"}, none);
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    EXPECT_NEAR(mish[i], v * std::tanh(std::log1p(std::exp(v))), 1e-6) << v;
    EXPECT_NEAR(gelu[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6) << v;
    EXPECT_NEAR(gelu_tanh[i], 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v))), 1e-6)
        << v;
  }
  // [1, 4, 2] in 2 groups: channels {0, 1} and {2, 3}, 4 values each.
  const std::vector<float> g = {0, 1, 2, 3, 10, 10, 10, 14};
  auto normalized = [&](size_t i) {
    size_t grp = i / 4;
    double mean = 0, var = 0;
    for (size_t k = grp * 4; k < grp * 4 + 4; ++k) mean += g[k] / 4.0;
    for (size_t k = grp * 4; k < grp * 4 + 4; ++k) var += (g[k] - mean) * (g[k] - mean) / 4.0;
    return (g[i] - mean) / std::sqrt(var + 1e-5);
  };
  auto group_norm = [&](int opset, std::vector<float> scale, std::vector<float> bias) {
    next_attrs = [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "num_groups", int64_t{2}); };
    return run1(opset, "GroupNormalization", {1, 4, 2}, g, {"x", "scale", "bias"}, [&](OnnxBuilder& b) {
      b.initializer("scale", {static_cast<int64_t>(scale.size())}, scale);
      b.initializer("bias", {static_cast<int64_t>(bias.size())}, bias);
    });
  };
  std::vector<float> per_group = group_norm(18, {2, 3}, {1, -1});
  std::vector<float> per_channel = group_norm(21, {1, 2, 3, 4}, {0, 0, 1, 1});
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(per_group[i], normalized(i) * (i < 4 ? 2 : 3) + (i < 4 ? 1 : -1), 1e-5) << i;
    EXPECT_NEAR(per_channel[i], normalized(i) * static_cast<double>(i / 2 + 1) + (i < 4 ? 0 : 1), 1e-5) << i;
  }
  std::string e;
  try {
    group_norm(21, {2, 3}, {1, -1});
  } catch (const CompileError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("scale has 2 values; opset 21 takes one per channel (4)"), std::string::npos) << e;
}

TEST(OnnxOpset18, WhatIsRefusedIsNamed) {
  auto error = [](int opset, const std::string& op, std::vector<int64_t> shape, const std::vector<std::string>& in,
                  auto&& init, std::function<void(onnx::NodeProto*)> attrs) {
    OnnxBuilder b(opset);
    b.input("x", shape);
    init(b);
    auto* n = b.node(op, in, {"y"}, "n0");
    if (attrs) attrs(n);
    b.output("y");
    return import_error(b.bytes());
  };
  std::string e = error(23, "Relu", {2}, {"x"}, none, nullptr);
  EXPECT_NE(e.find("opset 23 is newer than the newest Kiln reads (22)"), std::string::npos) << e;
  e = error(21, "DequantizeLinear", {4}, {"x", "s"}, [](OnnxBuilder& b) { b.initializer("s", {2}, {1, 2}); },
            [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "block_size", int64_t{2}); });
  EXPECT_NE(e.find("block_size 2: blocked quantization is not supported"), std::string::npos) << e;
  e = error(18, "LpPool", {1, 1, 4, 4}, {"x"}, none, [](onnx::NodeProto* n) {
    OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
    OnnxBuilder::attr(n, "dilations", std::vector<int64_t>{2, 2});
  });
  EXPECT_NE(e.find("dilations: dilated LpPool is not supported"), std::string::npos) << e;
  e = error(19, "Pad", {3}, {"x", "pads"}, [](OnnxBuilder& b) { b.initializer_i64("pads", {2}, {0, int64_t{1} << 40}); },
            [](onnx::NodeProto* n) { OnnxBuilder::attr(n, "mode", std::string("wrap")); });
  EXPECT_NE(e.find("wrap pads 0 and 1099511627776 of dimension 0 (3) leave a length outside 0 to 2^24"), std::string::npos) << e;
  // QuantizeLinear 21's output_dtype int8 without a zero point: an int8 result.
  OnnxBuilder q(21);
  q.input("x", {3});
  q.initializer("s", {}, {0.5f});
  auto* n = q.node("QuantizeLinear", {"x", "s"}, {"y"}, "q0");
  OnnxBuilder::attr(n, "output_dtype", int64_t{onnx::TensorProto::INT8});
  q.output("y");
  graph::Graph g = import_onnx_bytes(q.bytes());
  EXPECT_EQ(g.type(g.outputs()[0]).dtype, ir::DataType::Int(8));
}

TEST(OnnxOpset18, DftTakesItsAxisAsAnInput) {
  // [1, 4, 1] real signal, axis 1 given as input 2 at opset 20: bin 0 is the sum.
  std::vector<int64_t> shape;
  std::vector<float> y = run1(
      20, "DFT", {1, 4, 1}, {1, 2, 3, 4}, {"x", "", "axis"}, [](OnnxBuilder& b) { b.initializer_i64("axis", {}, {1}); }, &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 4, 2}));
  ASSERT_EQ(y.size(), 8u);
  EXPECT_NEAR(y[0], 10, 1e-5);
  EXPECT_NEAR(y[1], 0, 1e-5);
  EXPECT_NEAR(y[2], -2, 1e-5);  // bin 1: -2 + 2i
  EXPECT_NEAR(y[3], 2, 1e-5);
}

}  // namespace
}  // namespace kiln::frontend
