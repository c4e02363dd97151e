// The windowed ONNX operators beyond what the conformance suite covers (grouped 3-d
// ConvTranspose, 3-d MaxPool indices in column-major order, MaxUnpool with overlapping
// windows; LpPool, GlobalLpPool and LpNormalization, which it has no tests of) against
// direct loops, and their bad-input errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"
#include "tests/e2e/onnx_builder.h"
#include "tests/e2e/test_util.h"

namespace kiln::frontend {
namespace {

using test::OnnxBuilder;

std::string import_error(const OnnxBuilder& b) {
  try {
    import_onnx_bytes(b.bytes(), {}, "model.onnx");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

// Output `k` of the model run by the interpreter, as its raw elements.
template <typename T>
std::vector<T> run_output(const OnnxBuilder& b, const std::vector<std::vector<float>>& inputs, size_t k) {
  graph::Executor ex = graph::make_executor(graph::compile(import_onnx_bytes(b.bytes())), "interp");
  for (size_t i = 0; i < inputs.size(); ++i)
    ex.set_input(i, inputs[i].data(), static_cast<int64_t>(inputs[i].size() * sizeof(float)));
  ex.run();
  std::vector<T> out(static_cast<size_t>(ex.output_type(k).size()));
  EXPECT_EQ(ex.output_type(k).dtype.storage_bytes(), static_cast<int>(sizeof(T)));
  std::memcpy(out.data(), ex.output(k), out.size() * sizeof(T));
  return out;
}

// ConvTranspose, 3-d, two groups, strides, pads and output_padding: every input
// element scattered through its group's kernel.
TEST(OnnxWindow, GroupedConvTranspose3d) {
  const int64_t N = 1, C = 4, G = 2, OG = 3, D = 2, H = 3, W = 2, K = 3, S = 2, P = 1, OP = 1;
  const int64_t OD = (D - 1) * S - 2 * P + K + OP, OH = (H - 1) * S - 2 * P + K + OP, OW = (W - 1) * S - 2 * P + K + OP;
  OnnxBuilder b(13);
  b.input("x", {N, C, D, H, W});
  b.input("w", {C, OG, K, K, K});
  auto* n = b.node("ConvTranspose", {"x", "w"}, {"y"}, "deconv");
  OnnxBuilder::attr(n, "group", G);
  OnnxBuilder::attr(n, "strides", std::vector<int64_t>{S, S, S});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{P, P, P, P, P, P});
  OnnxBuilder::attr(n, "output_padding", std::vector<int64_t>{OP, OP, OP});
  b.output("y");
  auto x = test::random_floats(N * C * D * H * W, 1);
  auto w = test::random_floats(C * OG * K * K * K, 2);
  std::vector<float> want(static_cast<size_t>(N * G * OG * OD * OH * OW), 0.0f);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t o = 0; o < OG; ++o)
      for (int64_t z = 0; z < D; ++z)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t v = 0; v < W; ++v)
            for (int64_t kz = 0; kz < K; ++kz)
              for (int64_t ky = 0; ky < K; ++ky)
                for (int64_t kx = 0; kx < K; ++kx) {
                  int64_t oz = z * S - P + kz, oy = y * S - P + ky, ox = v * S - P + kx;
                  if (oz < 0 || oz >= OD || oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                  int64_t oc = c / (C / G) * OG + o;
                  want[static_cast<size_t>(((oc * OD + oz) * OH + oy) * OW + ox)] +=
                      x[static_cast<size_t>(((c * D + z) * H + y) * W + v)] *
                      w[static_cast<size_t>((((c * OG + o) * K + kz) * K + ky) * K + kx)];
                }
  auto got = run_output<float>(b, {x, w}, 0);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(test::rel_error(got, want), 1e-5);
}

// MaxPool 3-d with its Indices output, padded and strided, storage_order 1: the first
// maximum of each window, its spatial position flattened column-major after N and C.
TEST(OnnxWindow, MaxPool3dIndicesColumnMajor) {
  const int64_t N = 2, C = 2, D = 3, H = 4, W = 5, K = 2, S = 2, P = 1;
  const int64_t OD = (D + 2 * P - K) / S + 1, OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  OnnxBuilder b(13);
  b.input("x", {N, C, D, H, W});
  auto* n = b.node("MaxPool", {"x"}, {"y", "i"}, "pool");
  OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{K, K, K});
  OnnxBuilder::attr(n, "strides", std::vector<int64_t>{S, S, S});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{P, P, P, P, P, P});
  OnnxBuilder::attr(n, "storage_order", int64_t{1});
  b.output("y");
  b.output("i");
  // Few distinct values, so that windows have ties.
  auto x = test::random_floats(N * C * D * H * W, 3);
  for (auto& v : x) v = static_cast<float>(static_cast<int>(v * 3));
  std::vector<float> want_y;
  std::vector<int64_t> want_i;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oz = 0; oz < OD; ++oz)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = -1;
          for (int64_t kz = 0; kz < K; ++kz)
            for (int64_t ky = 0; ky < K; ++ky)
              for (int64_t kx = 0; kx < K; ++kx) {
                int64_t z = oz * S - P + kz, y = oy * S - P + ky, v = ox * S - P + kx;
                if (z < 0 || z >= D || y < 0 || y >= H || v < 0 || v >= W) continue;
                float e = x[static_cast<size_t>(((nc * D + z) * H + y) * W + v)];
                if (e > best) {
                  best = e;
                  at = nc * D * H * W + (v * H + y) * D + z;
                }
              }
          want_y.push_back(best);
          want_i.push_back(at);
        }
  EXPECT_EQ(run_output<float>(b, {x}, 0), want_y);
  EXPECT_EQ(run_output<int64_t>(b, {x}, 1), want_i);
}

// MaxPool with overlapping windows, then MaxUnpool of its values and indices: every
// window's maximum back at its place, zeros elsewhere.
TEST(OnnxWindow, MaxUnpoolOfOverlappingWindows) {
  const int64_t C = 2, H = 5, W = 7, K = 3, S = 2, P = 1;
  const int64_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  OnnxBuilder b(13);
  b.input("x", {1, C, H, W});
  b.initializer_i64("shape", {4}, {1, C, H, W});
  auto* p = b.node("MaxPool", {"x"}, {"y", "i"}, "pool");
  auto* u = b.node("MaxUnpool", {"y", "i", "shape"}, {"z"}, "unpool");
  for (auto* n : {p, u}) {
    OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{K, K});
    OnnxBuilder::attr(n, "strides", std::vector<int64_t>{S, S});
    OnnxBuilder::attr(n, "pads", std::vector<int64_t>{P, P, P, P});
  }
  b.output("z");
  auto x = test::random_floats(C * H * W, 4);
  std::vector<float> want(x.size(), 0.0f);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        int64_t at = -1;
        for (int64_t ky = 0; ky < K; ++ky)
          for (int64_t kx = 0; kx < K; ++kx) {
            int64_t y = oy * S - P + ky, v = ox * S - P + kx;
            if (y < 0 || y >= H || v < 0 || v >= W) continue;
            int64_t e = (c * H + y) * W + v;
            if (at < 0 || x[static_cast<size_t>(e)] > x[static_cast<size_t>(at)]) at = e;
          }
        want[static_cast<size_t>(at)] = x[static_cast<size_t>(at)];
      }
  EXPECT_EQ(run_output<float>(b, {x}, 0), want);
}

// Conv on 4 spatial dimensions, dilated AveragePool, a kernel_shape of the wrong
// length, an output_shape of the wrong length, LRN without size, MaxUnpool to other
// channels: errors that name the node and what is wrong.
// LpPool over 2-d data, p = 3, strided and padded (the padding counts as zeros), and
// over 1-d data, p = 2 with SAME_UPPER padding: (sum |x|^p)^(1/p) per window.
TEST(OnnxWindow, LpPoolMatchesLoops) {
  const int64_t N = 2, C = 3, H = 5, W = 6, KH = 3, KW = 2, S = 2, P = 1;
  const int64_t OH = (H + 2 * P - KH) / S + 1, OW = (W + 2 * P - KW) / S + 1;
  OnnxBuilder b(11);
  b.input("x", {N, C, H, W});
  auto* n = b.node("LpPool", {"x"}, {"y"}, "lp");
  OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{KH, KW});
  OnnxBuilder::attr(n, "strides", std::vector<int64_t>{S, S});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{P, P, P, P});
  OnnxBuilder::attr(n, "p", int64_t{3});
  b.output("y");
  auto x = test::random_floats(N * C * H * W, 4);
  std::vector<float> want;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double sum = 0;
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            int64_t y = oy * S - P + ky, v = ox * S - P + kx;
            if (y >= 0 && y < H && v >= 0 && v < W) sum += std::pow(std::fabs(x[static_cast<size_t>((nc * H + y) * W + v)]), 3.0);
          }
        want.push_back(static_cast<float>(std::cbrt(sum)));
      }
  auto got = run_output<float>(b, {x}, 0);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(test::rel_error(got, want), 1e-5);

  const int64_t L = 7, K = 3;
  OnnxBuilder b1(13);
  b1.input("x", {1, 2, L});
  auto* n1 = b1.node("LpPool", {"x"}, {"y"}, "lp1");
  OnnxBuilder::attr(n1, "kernel_shape", std::vector<int64_t>{K});
  OnnxBuilder::attr(n1, "auto_pad", std::string("SAME_UPPER"));
  b1.output("y");
  auto x1 = test::random_floats(2 * L, 5);
  std::vector<float> want1;
  for (int64_t ch = 0; ch < 2; ++ch)
    for (int64_t o = 0; o < L; ++o) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        int64_t i = o - 1 + k;  // SAME_UPPER with a window of 3: one element of padding each side
        if (i >= 0 && i < L) sum += double(x1[static_cast<size_t>(ch * L + i)]) * x1[static_cast<size_t>(ch * L + i)];
      }
      want1.push_back(static_cast<float>(std::sqrt(sum)));
    }
  auto got1 = run_output<float>(b1, {x1}, 0);
  ASSERT_EQ(got1.size(), want1.size());
  EXPECT_LT(test::rel_error(got1, want1), 1e-5);
}

// GlobalLpPool (p = 1 over 3-d data) and LpNormalization (p = 1 and 2, along the
// channels and along the last axis).
TEST(OnnxWindow, GlobalLpPoolAndLpNormalization) {
  const int64_t N = 2, C = 3, D = 2, H = 3, W = 4, S = D * H * W;
  OnnxBuilder b(13);
  b.input("x", {N, C, D, H, W});
  auto* n = b.node("GlobalLpPool", {"x"}, {"y"}, "glp");
  OnnxBuilder::attr(n, "p", int64_t{1});
  b.output("y");
  auto x = test::random_floats(N * C * S, 6);
  std::vector<float> want;
  for (int64_t nc = 0; nc < N * C; ++nc) {
    double sum = 0;
    for (int64_t i = 0; i < S; ++i) sum += std::fabs(x[static_cast<size_t>(nc * S + i)]);
    want.push_back(static_cast<float>(sum));
  }
  auto got = run_output<float>(b, {x}, 0);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(test::rel_error(got, want), 1e-5);

  for (int64_t p : {1, 2})
    for (int64_t axis : {1, -1}) {
      const int64_t A = 3, B = 4, E = 5;  // [A, B, E]; axis 1 is B, axis -1 is E
      OnnxBuilder bn(13);
      bn.input("x", {A, B, E});
      auto* nn = bn.node("LpNormalization", {"x"}, {"y"}, "lpn");
      OnnxBuilder::attr(nn, "p", p);
      OnnxBuilder::attr(nn, "axis", axis);
      bn.output("y");
      auto xn = test::random_floats(A * B * E, 7);
      std::vector<float> wn(xn.size());
      int64_t len = axis == 1 ? B : E, stride = axis == 1 ? E : 1;
      for (int64_t a = 0; a < A; ++a)
        for (int64_t o = 0; o < (axis == 1 ? E : B); ++o) {
          int64_t base = axis == 1 ? a * B * E + o : (a * B + o) * E;
          double norm = 0;
          for (int64_t i = 0; i < len; ++i) {
            double v = xn[static_cast<size_t>(base + i * stride)];
            norm += p == 1 ? std::fabs(v) : v * v;
          }
          if (p == 2) norm = std::sqrt(norm);
          for (int64_t i = 0; i < len; ++i)
            wn[static_cast<size_t>(base + i * stride)] = static_cast<float>(xn[static_cast<size_t>(base + i * stride)] / norm);
        }
      auto gn = run_output<float>(bn, {xn}, 0);
      ASSERT_EQ(gn.size(), wn.size());
      EXPECT_LT(test::rel_error(gn, wn), 1e-5) << "p " << p << ", axis " << axis;
    }
}

TEST(OnnxWindow, ErrorsNameTheNodeAndAttribute) {
  {
    OnnxBuilder b(13);
    b.input("x", {1, 1, 2, 2, 2, 2});
    b.input("w", {1, 1, 1, 1, 1, 1});
    b.node("Conv", {"x", "w"}, {"y"}, "conv4d");
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'conv4d' (Conv, opset 13)"), std::string::npos) << e;
    EXPECT_NE(e.find("1 to 3 spatial dimensions"), std::string::npos) << e;
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 1, 8, 8, 8});
    auto* n = b.node("AveragePool", {"x"}, {"y"}, "avg");
    OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{2, 2, 2});
    OnnxBuilder::attr(n, "dilations", std::vector<int64_t>{2, 2, 2});
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'avg' (AveragePool"), std::string::npos) << e;
    EXPECT_NE(e.find("dilations"), std::string::npos) << e;
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 1, 8});
    auto* n = b.node("MaxPool", {"x"}, {"y"}, "pool1d");
    OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'pool1d' (MaxPool"), std::string::npos) << e;
    EXPECT_NE(e.find("kernel_shape has 2 entries, the data has 1 spatial dimensions"), std::string::npos) << e;
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 1, 3, 3, 3});
    b.input("w", {1, 1, 3, 3, 3});
    auto* n = b.node("ConvTranspose", {"x", "w"}, {"y"}, "deconv");
    OnnxBuilder::attr(n, "output_shape", std::vector<int64_t>{5, 5});
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'deconv' (ConvTranspose"), std::string::npos) << e;
    EXPECT_NE(e.find("output_shape has 2 entries, the data has 3 spatial dimensions"), std::string::npos) << e;
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 4, 3, 3});
    b.node("LRN", {"x"}, {"y"}, "lrn");
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'lrn' (LRN"), std::string::npos) << e;
    EXPECT_NE(e.find("size must be positive"), std::string::npos) << e;
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 2, 2, 2});
    b.input("i", {1, 2, 2, 2}, onnx::TensorProto::INT64);
    b.initializer_i64("shape", {4}, {1, 3, 4, 4});
    auto* n = b.node("MaxUnpool", {"x", "i", "shape"}, {"y"}, "unpool");
    OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'unpool' (MaxUnpool"), std::string::npos) << e;
    EXPECT_NE(e.find("output_shape [1, 3, 4, 4] does not fit the values"), std::string::npos) << e;
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 2, 3});
    auto* n = b.node("LpNormalization", {"x"}, {"y"}, "norm");
    OnnxBuilder::attr(n, "p", int64_t{3});
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'norm' (LpNormalization"), std::string::npos) << e;
    EXPECT_NE(e.find("p must be 1 or 2, got 3"), std::string::npos) << e;
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 2, 4, 4});
    auto* n = b.node("LpPool", {"x"}, {"y"}, "lp");
    OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
    OnnxBuilder::attr(n, "p", int64_t{0});
    b.output("y");
    std::string e = import_error(b);
    EXPECT_NE(e.find("node 'lp' (LpPool"), std::string::npos) << e;
    EXPECT_NE(e.find("p must be positive, got 0"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace kiln::frontend
