// ONNX's recurrent layers (RNN, GRU, LSTM, unrolled by rnn_converters.cc) against a
// direct implementation of ONNX's equations: both directions, sequence_lens shorter
// than the sequence (known at compile time and given at run time), initial states,
// peepholes, linear_before_reset, layout 1; bad attributes name the node. And tensors
// without elements: legal inputs, empty results folded to constants, reductions over
// an empty axis give their identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/e2e/test_util.h"

namespace kiln::frontend {
namespace {

using graph::Graph;
using test::OnnxBuilder;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// One recurrent layer's data, layout 0 ([T, B, I] input, [dirs, ...] weights).
struct Layer {
  std::string op;  // RNN, GRU, LSTM
  int T = 0, B = 0, I = 0, H = 0, dirs = 1;
  bool linear_before_reset = false;
  bool reverse = false;                 // direction "reverse" (with dirs 1)
  float clip = 0;                       // 0: no clip
  std::string rnn_activation = "Tanh";  // RNN: Tanh or Relu
  std::vector<int> lens;  // empty: every batch runs T steps
  std::vector<float> x, w, r, bias, h0, c0, p;

  int gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
};

Layer make_layer(const std::string& op, int T, int B, int I, int H, int dirs, uint32_t seed) {
  Layer l;
  l.op = op;
  l.T = T;
  l.B = B;
  l.I = I;
  l.H = H;
  l.dirs = dirs;
  int G = l.gates();
  l.x = test::random_floats(int64_t{T} * B * I, seed);
  l.w = test::random_floats(int64_t{dirs} * G * H * I, seed + 1, -0.5, 0.5);
  l.r = test::random_floats(int64_t{dirs} * G * H * H, seed + 2, -0.5, 0.5);
  l.bias = test::random_floats(int64_t{dirs} * 2 * G * H, seed + 3, -0.5, 0.5);
  l.h0 = test::random_floats(int64_t{dirs} * B * H, seed + 4);
  l.c0 = test::random_floats(int64_t{dirs} * B * H, seed + 5);
  l.p = test::random_floats(int64_t{dirs} * 3 * H, seed + 6, -0.5, 0.5);
  return l;
}

struct Outputs {
  std::vector<float> y, y_h, y_c;  // [T, dirs, B, H], [dirs, B, H], [dirs, B, H]
};

// ONNX's equations with the default activations, step by step.
Outputs reference(const Layer& l) {
  const int T = l.T, B = l.B, I = l.I, H = l.H, G = l.gates();
  Outputs o;
  o.y.assign(static_cast<size_t>(T) * l.dirs * B * H, 0.0f);
  o.y_h.resize(static_cast<size_t>(l.dirs) * B * H);
  o.y_c.resize(o.y_h.size());
  for (int d = 0; d < l.dirs; ++d) {
    const float* W = &l.w[static_cast<size_t>(d) * G * H * I];
    const float* R = &l.r[static_cast<size_t>(d) * G * H * H];
    const float* Wb = &l.bias[static_cast<size_t>(d) * 2 * G * H];
    const float* Rb = Wb + G * H;
    const float* P = &l.p[static_cast<size_t>(d) * 3 * H];
    for (int b = 0; b < B; ++b) {
      std::vector<float> h(&l.h0[(static_cast<size_t>(d) * B + b) * H], &l.h0[(static_cast<size_t>(d) * B + b) * H] + H);
      std::vector<float> c(&l.c0[(static_cast<size_t>(d) * B + b) * H], &l.c0[(static_cast<size_t>(d) * B + b) * H] + H);
      int len = l.lens.empty() ? T : l.lens[b];
      for (int s = 0; s < len; ++s) {
        int t = d == 1 || l.reverse ? len - 1 - s : s;
        const float* xt = &l.x[(static_cast<size_t>(t) * B + b) * I];
        // xw[g], hr[g]: the input and recurrent products of gate row g, with biases.
        std::vector<float> xw(G * H), hr(G * H);
        for (int g = 0; g < G * H; ++g) {
          float a = Wb[g], e = Rb[g];
          for (int i = 0; i < I; ++i) a += W[g * I + i] * xt[i];
          for (int j = 0; j < H; ++j) e += R[g * H + j] * h[j];
          xw[g] = a;
          hr[g] = e;
        }
        std::vector<float> hn(H), cn(H);
        for (int j = 0; j < H; ++j) {
          if (l.op == "RNN") {
            float v = xw[j] + hr[j];
            if (l.clip > 0) v = std::clamp(v, -l.clip, l.clip);
            hn[j] = l.rnn_activation == "Relu" ? std::max(v, 0.0f) : std::tanh(v);
          } else if (l.op == "GRU") {
            float z = sigmoid(xw[j] + hr[j]);
            float rec = Rb[2 * H + j];  // the h gate's recurrent term, reset before or after R
            if (l.linear_before_reset) {
              rec = sigmoid(xw[H + j] + hr[H + j]) * hr[2 * H + j];
            } else {
              for (int k = 0; k < H; ++k) rec += R[(2 * H + j) * H + k] * sigmoid(xw[H + k] + hr[H + k]) * h[k];
            }
            float hh = std::tanh(xw[2 * H + j] + rec);
            hn[j] = (1 - z) * hh + z * h[j];
          } else {
            float i = sigmoid(xw[j] + hr[j] + P[j] * c[j]);
            float f = sigmoid(xw[2 * H + j] + hr[2 * H + j] + P[2 * H + j] * c[j]);
            float g = std::tanh(xw[3 * H + j] + hr[3 * H + j]);
            cn[j] = f * c[j] + i * g;
            float og = sigmoid(xw[H + j] + hr[H + j] + P[H + j] * cn[j]);
            hn[j] = og * std::tanh(cn[j]);
          }
        }
        h = hn;
        if (l.op == "LSTM") c = cn;
        for (int j = 0; j < H; ++j) o.y[((static_cast<size_t>(t) * l.dirs + d) * B + b) * H + j] = h[j];
      }
      for (int j = 0; j < H; ++j) {
        o.y_h[(static_cast<size_t>(d) * B + b) * H + j] = h[j];
        o.y_c[(static_cast<size_t>(d) * B + b) * H + j] = c[j];
      }
    }
  }
  return o;
}

// The layer as an ONNX node (weights as initializers, X as the input) with all outputs.
OnnxBuilder layer_model(const Layer& l, bool runtime_lens = false) {
  OnnxBuilder b(14);
  const int64_t G = l.gates(), H = l.H, D = l.dirs;
  b.input("x", {l.T, l.B, l.I});
  b.initializer("w", {D, G * H, l.I}, l.w);
  b.initializer("r", {D, G * H, H}, l.r);
  b.initializer("b", {D, 2 * G * H}, l.bias);
  b.initializer("h0", {D, l.B, H}, l.h0);
  std::vector<std::string> in{"x", "w", "r", "b", "", "h0"};
  if (!l.lens.empty()) {
    in[4] = "lens";
    if (runtime_lens) {
      b.input("lens", {l.B}, onnx::TensorProto::INT32);
    } else {
      auto* t = b.model().mutable_graph()->add_initializer();
      t->set_name("lens");
      t->set_data_type(onnx::TensorProto::INT32);
      t->add_dims(l.B);
      for (int v : l.lens) t->add_int32_data(v);
    }
  }
  std::vector<std::string> out{"y", "y_h"};
  if (l.op == "LSTM") {
    b.initializer("c0", {D, l.B, H}, l.c0);
    b.initializer("p", {D, 3 * H}, l.p);
    in.push_back("c0");
    in.push_back("p");
    out.push_back("y_c");
  }
  auto* n = b.node(l.op, in, out, "rnn1");
  OnnxBuilder::attr(n, "hidden_size", H);
  OnnxBuilder::attr(n, "direction", std::string(D == 2 ? "bidirectional" : l.reverse ? "reverse" : "forward"));
  if (l.clip > 0) OnnxBuilder::attr(n, "clip", l.clip);
  if (l.rnn_activation != "Tanh") {
    auto* a = n->add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings(l.rnn_activation);
  }
  if (l.linear_before_reset) OnnxBuilder::attr(n, "linear_before_reset", int64_t{1});
  for (const auto& o : out) b.output(o);
  return b;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << what << " at " << i;
}

void check_layer(const Layer& l) {
  Graph g = import_onnx_bytes(layer_model(l).bytes());
  Outputs want = reference(l);
  expect_close(test::run_graph(g, {l.x}, "interp", {}, 0), want.y, "Y");
  expect_close(test::run_graph(g, {l.x}, "interp", {}, 1), want.y_h, "Y_h");
  if (l.op == "LSTM") expect_close(test::run_graph(g, {l.x}, "interp", {}, 2), want.y_c, "Y_c");
}

TEST(OnnxRnn, BidirectionalLstmWithPeepholesAndShortSequences) {
  Layer l = make_layer("LSTM", 5, 3, 4, 3, 2, 10);
  l.lens = {5, 2, 0};
  check_layer(l);
}

TEST(OnnxRnn, BidirectionalGruBothResetOrders) {
  for (bool lbr : {false, true}) {
    Layer l = make_layer("GRU", 4, 2, 3, 5, 2, 20);
    l.linear_before_reset = lbr;
    l.lens = {3, 4};
    check_layer(l);
  }
}

TEST(OnnxRnn, ForwardRnn) { check_layer(make_layer("RNN", 6, 2, 3, 4, 1, 30)); }

TEST(OnnxRnn, ReverseRnnWithReluAndClip) {
  Layer l = make_layer("RNN", 5, 2, 3, 4, 1, 35);
  l.reverse = true;
  l.clip = 0.3f;
  l.rnn_activation = "Relu";
  l.lens = {2, 5};
  check_layer(l);
}

// sequence_lens given at run time: the masks are computed in the graph.
TEST(OnnxRnn, SequenceLengthsAtRunTime) {
  Layer l = make_layer("GRU", 4, 3, 2, 3, 2, 40);
  l.lens = {1, 4, 2};
  Graph g = import_onnx_bytes(layer_model(l, true).bytes());
  graph::Executor ex = graph::make_executor(graph::compile(g), "interp");
  ASSERT_EQ(ex.num_inputs(), 2u);
  ex.set_input(0, l.x.data(), static_cast<int64_t>(l.x.size() * sizeof(float)));
  ex.set_input(1, l.lens.data(), static_cast<int64_t>(l.lens.size() * sizeof(int)));
  ex.run();
  Outputs want = reference(l);
  std::vector<float> y_h(want.y_h.size());
  ASSERT_EQ(ex.output_type(1).size(), static_cast<int64_t>(y_h.size()));
  std::memcpy(y_h.data(), ex.output(1), y_h.size() * sizeof(float));
  expect_close(y_h, want.y_h, "Y_h");
}

// layout 1 ([B, T, I] in, [B, T, dirs, H] and [B, dirs, H] out) is layout 0 transposed.
TEST(OnnxRnn, BatchMajorLayout) {
  Layer l = make_layer("LSTM", 3, 2, 2, 4, 1, 50);
  Outputs want = reference(l);
  OnnxBuilder b(14);
  b.input("x", {l.B, l.T, l.I});
  b.initializer("w", {1, 16, l.I}, l.w);
  b.initializer("r", {1, 16, 4}, l.r);
  auto* n = b.node("LSTM", {"x", "w", "r"}, {"y", "", "y_c"}, "lstm_bt");
  OnnxBuilder::attr(n, "hidden_size", int64_t{4});
  OnnxBuilder::attr(n, "layout", int64_t{1});
  b.output("y");
  b.output("y_c");
  // The reference without biases and initial state.
  std::fill(l.bias.begin(), l.bias.end(), 0.0f);
  std::fill(l.h0.begin(), l.h0.end(), 0.0f);
  std::fill(l.c0.begin(), l.c0.end(), 0.0f);
  std::fill(l.p.begin(), l.p.end(), 0.0f);
  want = reference(l);
  std::vector<float> xb(l.x.size());
  for (int t = 0; t < l.T; ++t)
    for (int bb = 0; bb < l.B; ++bb)
      for (int i = 0; i < l.I; ++i) xb[(bb * l.T + t) * l.I + i] = l.x[(t * l.B + bb) * l.I + i];
  Graph g = import_onnx_bytes(b.bytes());
  auto y = test::run_graph(g, {xb}, "interp", {}, 0);
  auto y_c = test::run_graph(g, {xb}, "interp", {}, 1);
  std::vector<float> y_want(y.size());
  for (int t = 0; t < l.T; ++t)
    for (int bb = 0; bb < l.B; ++bb)
      for (int j = 0; j < 4; ++j) y_want[(bb * l.T + t) * 4 + j] = want.y[(t * l.B + bb) * 4 + j];
  expect_close(y, y_want, "Y");
  expect_close(y_c, want.y_c, "Y_c");
}

std::string rnn_error(const std::string& attr_name, const std::string& value) {
  OnnxBuilder b(14);
  b.input("x", {2, 1, 3});
  b.initializer("w", {1, 4, 3}, test::random_floats(12, 1));
  b.initializer("r", {1, 4, 4}, test::random_floats(16, 2));
  auto* n = b.node("RNN", {"x", "w", "r"}, {"y"}, "rnn7");
  OnnxBuilder::attr(n, "hidden_size", int64_t{4});
  if (attr_name == "activations") {
    auto* a = n->add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings(value);
  } else if (attr_name == "hidden_size") {
    n->mutable_attribute(0)->set_i(std::stoi(value));
  } else {
    OnnxBuilder::attr(n, attr_name, value);
  }
  b.output("y");
  try {
    import_onnx_bytes(b.bytes(), {}, "model.onnx");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxRnn, BadAttributesNameTheNodeAndAttribute) {
  std::string e = rnn_error("direction", "sideways");
  EXPECT_NE(e.find("node 'rnn7' (RNN, opset 14)"), std::string::npos) << e;
  EXPECT_NE(e.find("attribute 'direction' is 'sideways'"), std::string::npos) << e;
  e = rnn_error("activations", "Swish");
  EXPECT_NE(e.find("attribute 'activations': function 'Swish' is not supported"), std::string::npos) << e;
  e = rnn_error("hidden_size", "5");
  EXPECT_NE(e.find("node 'rnn7'"), std::string::npos) << e;
  EXPECT_NE(e.find("input 1 (W) has shape"), std::string::npos) << e;
}

// A zero-size input is legal; results without elements become constants (no kernel),
// and a sum over an empty axis is 0.
TEST(ZeroSize, EmptyTensorsFoldAndReduceToTheIdentity) {
  OnnxBuilder b(13);
  b.input("x", {2, 0, 3});
  b.node("Relu", {"x"}, {"r"});
  b.initializer_i64("axes", {1}, {1});
  auto* s = b.node("ReduceSum", {"r", "axes"}, {"y"});
  OnnxBuilder::attr(s, "keepdims", int64_t{0});
  b.node("Neg", {"x"}, {"e"});
  b.output("y");
  b.output("e");
  Graph g = import_onnx_bytes(b.bytes());
  EXPECT_EQ(g.num_ops(), 0);
  graph::Executor ex = graph::make_executor(graph::compile(g), "interp");
  ex.run();
  ASSERT_EQ(ex.output_type(0).shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> y(6, 1.0f);
  std::memcpy(y.data(), ex.output(0), sizeof(float) * y.size());
  for (float v : y) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(ex.output_type(1).shape, (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(ex.output_type(1).size(), 0);
}

}  // namespace
}  // namespace kiln::frontend
