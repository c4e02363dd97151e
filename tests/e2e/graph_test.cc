// The graph IR: type inference, errors, the printer, and every operator's compute
// against plain C++ loops (run through the reference interpreter).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/graph/graph.h"
#include "compiler/graph/op.h"
#include "compiler/support/error.h"
#include "tests/e2e/test_util.h"

namespace kiln::graph {
namespace {

using test::random_floats;
using test::rel_error;
using test::run_graph;

const DataType f32 = DataType::Float(32);

ConstData const_f32(std::vector<int64_t> shape, const std::vector<float>& v) {
  auto b = std::make_shared<interp::HostBuffer>(f32, shape);
  std::memcpy(b->data(), v.data(), v.size() * sizeof(float));
  return b;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(GraphIR, InfersTypesAndPrints) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, 3, 8, 8}});
  NodeId w = g.add_constant("w", const_f32({4, 3, 3, 3}, random_floats(108, 1)));
  NodeId y = g.add_op("conv2d", {x, w}, {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                      "conv");
  NodeId r = g.add_op("relu", {y});
  g.add_output(r, "out");
  EXPECT_EQ(g.type(y), (TensorType{f32, {1, 4, 4, 4}}));
  EXPECT_EQ(g.num_ops(), 2);
  std::string text = to_string(g);
  EXPECT_NE(text.find("%2 = conv2d(%0, %1) {pads=[1, 1, 1, 1], strides=[2, 2]} : float32[1, 4, 4, 4]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("outputs: %3"), std::string::npos);
}

TEST(GraphIR, ShapeErrorsNameTheNode) {
  Graph g;
  NodeId a = g.add_input("a", {f32, {2, 3}});
  NodeId b = g.add_input("b", {f32, {4, 3}});
  std::string e = error_of([&] { g.add_op("add", {a, b}, {}, "my_add"); });
  EXPECT_NE(e.find("node 'my_add' (add)"), std::string::npos) << e;
  EXPECT_NE(e.find("do not broadcast"), std::string::npos) << e;
  e = error_of([&] { g.add_op("matmul", {a, a}, {}, "mm"); });
  EXPECT_NE(e.find("inner dimensions differ (3 and 2)"), std::string::npos) << e;
  e = error_of([&] { g.add_op("no_such_op", {a}); });
  EXPECT_NE(e.find("unknown graph operator 'no_such_op'"), std::string::npos) << e;
  e = error_of([&] { g.add_op("reshape", {a}, {{"shape", std::vector<int64_t>{5}}}, "r"); });
  EXPECT_NE(e.find("6 elements cannot be reshaped to [5]"), std::string::npos) << e;
  // A dimension of 0 is legal (a tensor without elements); a negative one is not.
  e = error_of([&] { g.add_input("bad", {f32, {-1, 3}}); });
  EXPECT_NE(e.find("dimension -1 is not a static size"), std::string::npos) << e;
}

// ---------------------------------------------------------------- operators vs loops

struct Conv {
  int n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, g;
};

std::vector<float> conv_ref(const Conv& p, const std::vector<float>& x, const std::vector<float>& wt, int oh, int ow) {
  std::vector<float> y(static_cast<size_t>(p.n * p.o * oh * ow), 0);
  int cg = p.c / p.g, og = p.o / p.g;
  for (int n = 0; n < p.n; ++n)
    for (int o = 0; o < p.o; ++o)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j) {
          double s = 0;
          for (int c = 0; c < cg; ++c)
            for (int ky = 0; ky < p.kh; ++ky)
              for (int kx = 0; kx < p.kw; ++kx) {
                int yy = i * p.sh - p.pt + ky * p.dh, xx = j * p.sw - p.pl + kx * p.dw;
                if (yy < 0 || yy >= p.h || xx < 0 || xx >= p.w) continue;
                int ci = o / og * cg + c;
                s += static_cast<double>(x[((n * p.c + ci) * p.h + yy) * p.w + xx]) * wt[((o * cg + c) * p.kh + ky) * p.kw + kx];
              }
          y[((n * p.o + o) * oh + i) * ow + j] = static_cast<float>(s);
        }
  return y;
}

TEST(GraphOps, Conv2dMatchesLoops) {
  for (Conv p : {Conv{1, 3, 9, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Conv{2, 4, 10, 7, 6, 3, 2, 2, 1, 0, 1, 2, 0, 1, 1, 2},
                 Conv{1, 4, 8, 8, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 4}, Conv{1, 8, 5, 5, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, {p.n, p.c, p.h, p.w}});
    auto wv = random_floats(p.o * (p.c / p.g) * p.kh * p.kw, 2);
    NodeId w = g.add_constant("w", const_f32({p.o, p.c / p.g, p.kh, p.kw}, wv));
    NodeId y = g.add_op("conv2d", {x, w},
                        {{"strides", std::vector<int64_t>{p.sh, p.sw}},
                         {"pads", std::vector<int64_t>{p.pt, p.pl, p.pb, p.pr}},
                         {"dilations", std::vector<int64_t>{p.dh, p.dw}},
                         {"groups", int64_t{p.g}}});
    g.add_output(y);
    auto xv = random_floats(p.n * p.c * p.h * p.w, 3);
    int oh = static_cast<int>(g.type(y).shape[2]), ow = static_cast<int>(g.type(y).shape[3]);
    EXPECT_LT(rel_error(run_graph(g, {xv}), conv_ref(p, xv, wv, oh, ow)), 1e-5);
  }
}

TEST(GraphOps, Conv2dTransposeMatchesScatter) {
  int n = 1, c = 3, h = 4, w = 5, o = 2, k = 3, s = 2, pad = 1, op = 1;
  Graph g;
  NodeId x = g.add_input("x", {f32, {n, c, h, w}});
  auto wv = random_floats(c * o * k * k, 4);
  NodeId wt = g.add_constant("w", const_f32({c, o, k, k}, wv));
  NodeId y = g.add_op("conv2d_transpose", {x, wt},
                      {{"strides", std::vector<int64_t>{s, s}},
                       {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                       {"output_padding", std::vector<int64_t>{op, op}}});
  g.add_output(y);
  int oh = (h - 1) * s - 2 * pad + k + op, ow = (w - 1) * s - 2 * pad + k + op;
  ASSERT_EQ(g.type(y), (TensorType{f32, {n, o, oh, ow}}));
  auto xv = random_floats(n * c * h * w, 5);
  std::vector<float> ref(static_cast<size_t>(o * oh * ow), 0);
  for (int ci = 0; ci < c; ++ci)
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < w; ++j)
        for (int oc = 0; oc < o; ++oc)
          for (int ky = 0; ky < k; ++ky)
            for (int kx = 0; kx < k; ++kx) {
              int yy = i * s - pad + ky, xx = j * s - pad + kx;
              if (yy < 0 || yy >= oh || xx < 0 || xx >= ow) continue;
              ref[(oc * oh + yy) * ow + xx] += xv[(ci * h + i) * w + j] * wv[((ci * o + oc) * k + ky) * k + kx];
            }
  EXPECT_LT(rel_error(run_graph(g, {xv}), ref), 1e-5);
}

TEST(GraphOps, PoolingMatchesPyTorchSemantics) {
  // 7x7 input, 3x3 window, stride 2, pad 1, ceil mode: 4x4 output.
  int h = 7;
  auto xv = random_floats(2 * h * h, 6);
  for (bool is_max : {true, false})
    for (int64_t include_pad : {0, 1}) {
      Graph g;
      NodeId x = g.add_input("x", {f32, {1, 2, h, h}});
      Attrs a{{"kernel", std::vector<int64_t>{3, 3}},
              {"strides", std::vector<int64_t>{2, 2}},
              {"pads", std::vector<int64_t>{1, 1, 1, 1}},
              {"ceil_mode", int64_t{1}},
              {"count_include_pad", include_pad}};
      NodeId y = g.add_op(is_max ? "max_pool2d" : "avg_pool2d", {x}, a);
      g.add_output(y);
      ASSERT_EQ(g.type(y).shape, (std::vector<int64_t>{1, 2, 4, 4}));
      std::vector<float> ref;
      for (int c = 0; c < 2; ++c)
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            double m = -1e30, s = 0;
            int hs = i * 2 - 1, ws = j * 2 - 1;
            int he = std::min(hs + 3, h + 1), we = std::min(ws + 3, h + 1);
            int cnt = include_pad ? (he - hs) * (we - ws) : (std::min(he, h) - std::max(hs, 0)) * (std::min(we, h) - std::max(ws, 0));
            for (int y2 = std::max(hs, 0); y2 < std::min(he, h); ++y2)
              for (int x2 = std::max(ws, 0); x2 < std::min(we, h); ++x2) {
                m = std::max(m, static_cast<double>(xv[(c * h + y2) * h + x2]));
                s += xv[(c * h + y2) * h + x2];
              }
            ref.push_back(static_cast<float>(is_max ? m : s / cnt));
          }
      EXPECT_LT(rel_error(run_graph(g, {xv}), ref), 1e-6) << is_max << include_pad;
    }
}

TEST(GraphOps, BatchedMatmulBroadcasts) {
  Graph g;
  NodeId a = g.add_input("a", {f32, {2, 1, 3, 4}});
  NodeId b = g.add_input("b", {f32, {3, 4, 5}});
  NodeId y = g.add_op("matmul", {a, b});
  g.add_output(y);
  ASSERT_EQ(g.type(y).shape, (std::vector<int64_t>{2, 3, 3, 5}));
  auto av = random_floats(24, 7), bv = random_floats(60, 8);
  std::vector<float> ref;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) {
          double s = 0;
          for (int k = 0; k < 4; ++k) s += av[(p * 3 + i) * 4 + k] * bv[(q * 4 + k) * 5 + j];
          ref.push_back(static_cast<float>(s));
        }
  EXPECT_LT(rel_error(run_graph(g, {av, bv}), ref), 1e-6);
}

TEST(GraphOps, SoftmaxAndReductions) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {2, 3, 4}});
  NodeId sm = g.add_op("softmax", {x}, {{"axis", int64_t{1}}});
  NodeId mean = g.add_op("mean", {sm}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{0}}});
  g.add_output(mean);
  auto xv = random_floats(24, 9, -3, 3);
  std::vector<float> ref;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b) {
      double s = 0;
      for (int c = 0; c < 4; ++c) {
        double den = 0;
        for (int k = 0; k < 3; ++k) den += std::exp(xv[(a * 3 + k) * 4 + c]);
        s += std::exp(xv[(a * 3 + b) * 4 + c]) / den;
      }
      ref.push_back(static_cast<float>(s / 4));
    }
  EXPECT_LT(rel_error(run_graph(g, {xv}), ref), 1e-6);
}

// Reductions of a long last axis run as 16 partial results first (ops.cc); each kind,
// kept or dropped, and a softmax over such rows (on the CPU: cpu_gemm_kernels_test).
TEST(GraphOps, LongRowReductionsInPartials) {
  const int rows = 6, n = 768;
  auto xv = random_floats(rows * n, 10, -3, 3);
  for (const char* kind : {"sum", "mean", "max", "min"})
    for (int64_t keep : {0, 1}) {
      Graph g;
      NodeId x = g.add_input("x", {f32, {2, 3, n}});
      g.add_output(g.add_op(kind, {x}, {{"axes", std::vector<int64_t>{2}}, {"keepdims", keep}}));
      std::vector<float> ref;
      for (int r = 0; r < rows; ++r) {
        double acc = std::string(kind) == "max" ? -1e30 : std::string(kind) == "min" ? 1e30 : 0;
        for (int c = 0; c < n; ++c) {
          double v = xv[r * n + c];
          acc = std::string(kind) == "max" ? std::max(acc, v) : std::string(kind) == "min" ? std::min(acc, v) : acc + v;
        }
        ref.push_back(static_cast<float>(std::string(kind) == "mean" ? acc / n : acc));
      }
      EXPECT_LT(rel_error(run_graph(g, {xv}), ref), 1e-6) << kind << " keepdims=" << keep;
    }
  Graph g;
  NodeId x = g.add_input("x", {f32, {rows, n}});
  g.add_output(g.add_op("softmax", {x}, {{"axis", int64_t{-1}}}));
  std::vector<float> ref;
  for (int r = 0; r < rows; ++r) {
    double mx = -1e30, den = 0;
    for (int c = 0; c < n; ++c) mx = std::max(mx, static_cast<double>(xv[r * n + c]));
    for (int c = 0; c < n; ++c) den += std::exp(xv[r * n + c] - mx);
    for (int c = 0; c < n; ++c) ref.push_back(static_cast<float>(std::exp(xv[r * n + c] - mx) / den));
  }
  EXPECT_LT(rel_error(run_graph(g, {xv}), ref), 1e-6);
}

TEST(GraphOps, InjectiveOps) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {2, 3, 4}});
  // transpose -> [4, 2, 3]; slice rows 3..0 step -2 -> [2, 2, 3]; concat with itself on
  // axis 2 -> [2, 2, 6]; pad axis 0 by (1, 0) -> [3, 2, 6]; take index 1 of axis 2 -> [3, 2].
  NodeId t = g.add_op("transpose", {x}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  NodeId s = g.add_op("strided_slice", {t},
                      {{"begin", std::vector<int64_t>{3, 0, 0}}, {"end", std::vector<int64_t>{-1, 2, 3}}, {"steps", std::vector<int64_t>{-2, 1, 1}}});
  NodeId c = g.add_op("concatenate", {s, s}, {{"axis", int64_t{2}}});
  NodeId p = g.add_op("pad", {c}, {{"pads", std::vector<int64_t>{1, 0, 0, 0, 0, 0}}, {"value", 7.0}});
  auto idx = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::vector<int64_t>{2});
  idx->set_int(0, 4);
  idx->set_int(1, -1);
  NodeId k = g.add_op("take", {p, g.add_constant("idx", idx)}, {{"axis", int64_t{2}}});
  g.add_output(k);
  ASSERT_EQ(g.type(k).shape, (std::vector<int64_t>{3, 2, 2}));
  auto xv = random_floats(24, 10);
  auto X = [&](int a, int b, int c2) { return xv[(a * 3 + b) * 4 + c2]; };
  std::vector<float> ref;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      for (int q : {4, 5}) {  // concat column q -> s column q % 3
        if (i == 0) { ref.push_back(7); continue; }
        int row = 3 - 2 * (i - 1);  // t row (x's axis 2)
        ref.push_back(X(j, q % 3, row));
      }
  EXPECT_EQ(run_graph(g, {xv}), ref);
}

// take with a rank-0 index drops the axis (ONNX Gather of a scalar: Swin Transformer's
// q, k, v = qkv[0], qkv[1], qkv[2]), and what reads it sees the lower rank: here a
// transpose of the 3-d result, in one injective kernel with the take.
TEST(GraphOps, TakeOfAScalarIndexDropsTheAxis) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {3, 2, 4, 5}});
  auto idx = std::make_shared<interp::HostBuffer>(DataType::Int(64), std::vector<int64_t>{});
  idx->set_int(0, 1);
  NodeId k = g.add_op("take", {x, g.add_constant("idx", idx)}, {{"axis", int64_t{0}}});
  NodeId t = g.add_op("transpose", {k}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  g.add_output(t);
  ASSERT_EQ(g.type(k).shape, (std::vector<int64_t>{2, 4, 5}));
  auto xv = random_floats(120, 12);
  std::vector<float> ref;
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 5; ++c)
      for (int b = 0; b < 4; ++b) ref.push_back(xv[((1 * 2 + a) * 4 + b) * 5 + c]);
  EXPECT_EQ(run_graph(g, {xv}), ref);
}

TEST(GraphOps, ElementwiseFormulas) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {64}});
  std::vector<std::pair<std::string, std::function<double(double)>>> ops = {
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"hard_swish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }},
      {"hard_sigmoid", [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }},
      {"leaky_relu", [](double v) { return v < 0 ? 0.01 * v : v; }},
      {"tanh", [](double v) { return std::tanh(v); }},
  };
  auto xv = random_floats(64, 11, -4, 4);
  for (auto& [op, f] : ops) {
    Graph h = g;
    h.add_output(h.add_op(op, {x}));
    std::vector<float> ref;
    for (float v : xv) ref.push_back(static_cast<float>(f(v)));
    EXPECT_LT(rel_error(run_graph(h, {xv}), ref), 1e-6) << op;
  }
}

}  // namespace
}  // namespace kiln::graph
