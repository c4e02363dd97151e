// The host's int8 kernels (AlterLayoutInt8, ops_int8.cc, dot_u8s8x4 in the CPU
// backend): int8/uint8 conv2d and dense/matmul with int32 accumulation, alone and with
// the requantize epilogue (bias, shift, clip, cast), on many shapes. Every result must
// equal a direct integer reference bit for bit, on the host (VNNI where it has it),
// on the host without VNNI (pmaddwd), without VNNI and AVX-512BW (plain 16-bit
// products), and in the reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/module.h"
#include "backend-cpu/target.h"
#include "compiler/graph/executor.h"

namespace kiln::graph {
namespace {

using ir::DataType;

std::vector<int8_t> random_bytes(int64_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int8_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int8_t>(d(rng));
  return v;
}

ConstData buffer_of(DataType t, std::vector<int64_t> shape, const void* data) {
  auto b = std::make_shared<interp::HostBuffer>(t, shape);
  std::memcpy(b->data(), data, static_cast<size_t>(b->size() * t.storage_bytes()));
  return b;
}

struct Epilogue {
  bool on = false;  // add(bias), right_shift(k), clip, cast int8
  int shift = 7;
  bool relu = false;
};

// Runs output 0 of a compiled model on `x` with a backend and a target string; returns its bytes.
std::vector<uint8_t> run(const CompiledModel& m, const std::vector<int8_t>& x, const std::string& backend,
                         const std::string& target) {
  Executor ex = make_executor(m, backend, target);
  ex.set_input(0, x.data(), static_cast<int64_t>(x.size()));
  ex.run();
  std::vector<uint8_t> out(static_cast<size_t>(ex.output_bytes(0)));
  std::memcpy(out.data(), ex.output(0), out.size());
  return out;
}

// acc (int32) through the epilogue, as quantize_realize writes it.
NodeId add_epilogue(Graph& g, NodeId acc, int64_t channels, bool conv, const Epilogue& e, uint32_t seed,
                    std::vector<int32_t>* bias) {
  if (!e.on) return acc;
  std::mt19937 rng(seed);
  bias->resize(static_cast<size_t>(channels));
  for (auto& b : *bias) b = std::uniform_int_distribution<int>(-5000, 5000)(rng);
  std::vector<int64_t> bshape = conv ? std::vector<int64_t>{1, channels, 1, 1} : std::vector<int64_t>{1, channels};
  acc = g.add_op("add", {acc, g.add_constant("bias", buffer_of(DataType::Int(32), bshape, bias->data()))});
  acc = g.add_op("right_shift", {acc, g.add_scalar("k", DataType::Int(32), e.shift)});
  acc = g.add_op("clip", {acc}, {{"min", e.relu ? 0.0 : -128.0}, {"max", 127.0}});
  return g.add_op("cast", {acc}, {{"dtype", std::string("int8")}});
}

int32_t requant(int64_t acc, int32_t bias, const Epilogue& e) {
  int64_t v = static_cast<int32_t>(acc + bias) >> e.shift;
  return static_cast<int32_t>(std::clamp<int64_t>(v, e.relu ? 0 : -128, 127));
}

// Compares a result with the reference: int32 accumulators, or int8 after the epilogue.
void expect_equal(const std::vector<uint8_t>& got, const std::vector<int64_t>& acc, const std::vector<int32_t>& bias,
                  int64_t channels, int64_t inner, const Epilogue& e, const std::string& what) {
  size_t bytes = e.on ? 1 : 4;
  ASSERT_EQ(got.size(), acc.size() * bytes) << what;
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < acc.size(); ++i) {
    int64_t c = static_cast<int64_t>(i) / inner % channels;
    int32_t want = e.on ? requant(acc[i], bias[static_cast<size_t>(c)], e) : static_cast<int32_t>(acc[i]);
    int32_t have;
    if (e.on) {
      have = static_cast<int8_t>(got[i]);
    } else {
      std::memcpy(&have, &got[i * 4], 4);
    }
    if (have != want && bad++ == 0) first = static_cast<int64_t>(i);
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << acc.size() << " differ, first at " << first;
}

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> pads;  // t, l, b, r
  bool unsigned_data = false;
  Epilogue epilogue = {};
  int64_t groups = 1;
};

std::string name_of(const ConvCase& k) {
  return "conv " + std::to_string(k.n) + "x" + std::to_string(k.c) + "x" + std::to_string(k.h) + "x" + std::to_string(k.w) +
         " o" + std::to_string(k.o) + " k" + std::to_string(k.kh) + "x" + std::to_string(k.kw) + " s" + std::to_string(k.sh) +
         " d" + std::to_string(k.dh) + " g" + std::to_string(k.groups) + (k.unsigned_data ? " u8" : " s8") +
         (k.epilogue.on ? " requant" : "");
}

class Int8Kernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }

  // Every backend configuration the case must agree on with the reference.
  // `fast_op`: the operator the fast path must have put into the graph ("" for none).
  void check(const Graph& g, const std::vector<int8_t>& x, const std::vector<int64_t>& acc, const std::vector<int32_t>& bias,
             int64_t channels, int64_t inner, const Epilogue& e, const std::string& what, bool interp,
             const std::string& fast_op) {
    CompiledModel m = compile(g);
    bool packed = false;
    for (const Node& n : m.graph.nodes()) packed = packed || n.op == fast_op;
    EXPECT_EQ(packed, !fast_op.empty()) << what;
    expect_equal(run(m, x, "cpu", "llvm"), acc, bias, channels, inner, e, what + " (host)");
    expect_equal(run(m, x, "cpu", "llvm -mattr=-avx512vnni,-avxvnni"), acc, bias, channels, inner, e, what + " (no VNNI)");
    expect_equal(run(m, x, "cpu", "llvm -mattr=-avx512vnni,-avxvnni,-avx512bw"), acc, bias, channels, inner, e,
                 what + " (no VNNI, no pmaddwd)");
    if (interp) expect_equal(run(m, x, "interp", ""), acc, bias, channels, inner, e, what + " (interpreter)");
  }

  void conv(const ConvCase& k, bool interp = false) {
    int64_t oh = (k.h + k.pads[0] + k.pads[2] - k.dh * (k.kh - 1) - 1) / k.sh + 1;
    int64_t ow = (k.w + k.pads[1] + k.pads[3] - k.dw * (k.kw - 1) - 1) / k.sw + 1;
    int64_t cg = k.c / k.groups, og = k.o / k.groups;
    auto x = random_bytes(k.n * k.c * k.h * k.w, 11, k.unsigned_data ? 0 : -128, k.unsigned_data ? 255 : 127);
    auto wt = random_bytes(k.o * cg * k.kh * k.kw, 12, -128, 127);
    Graph g;
    DataType xt = k.unsigned_data ? DataType::UInt(8) : DataType::Int(8);
    NodeId in = g.add_input("x", TensorType{xt, {k.n, k.c, k.h, k.w}});
    NodeId wn = g.add_constant("w", buffer_of(DataType::Int(8), {k.o, cg, k.kh, k.kw}, wt.data()));
    Attrs a{{"strides", std::vector<int64_t>{k.sh, k.sw}}, {"pads", k.pads}, {"dilations", std::vector<int64_t>{k.dh, k.dw}},
            {"groups", k.groups}, {"out_dtype", std::string("int32")}};
    std::vector<int32_t> bias;
    g.add_output(add_epilogue(g, g.add_op("conv2d", {in, wn}, a, "conv"), k.o, true, k.epilogue, 13, &bias));
    std::vector<int64_t> acc(static_cast<size_t>(k.n * k.o * oh * ow), 0);
    auto X = [&](int64_t n, int64_t c, int64_t y, int64_t xx) -> int64_t {
      int8_t v = x[static_cast<size_t>(((n * k.c + c) * k.h + y) * k.w + xx)];
      return k.unsigned_data ? static_cast<uint8_t>(v) : v;
    };
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t o = 0; o < k.o; ++o)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t xx = 0; xx < ow; ++xx) {
            int64_t s = 0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t ry = 0; ry < k.kh; ++ry)
                for (int64_t rx = 0; rx < k.kw; ++rx) {
                  int64_t iy = y * k.sh - k.pads[0] + ry * k.dh, ix = xx * k.sw - k.pads[1] + rx * k.dw;
                  if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                  s += X(n, o / og * cg + c, iy, ix) * wt[static_cast<size_t>(((o * cg + c) * k.kh + ry) * k.kw + rx)];
                }
            acc[static_cast<size_t>(((n * k.o + o) * oh + y) * ow + xx)] = s;
          }
    // One group takes the fast path; grouped and depthwise convolutions the default one.
    check(g, x, acc, bias, k.o, oh * ow, k.epilogue, name_of(k), interp, k.groups == 1 ? "conv2d_nchwc_int8" : "");
  }

  void dense(int64_t m, int64_t kk, int64_t n, bool transposed, bool unsigned_data, Epilogue e, bool interp = false) {
    auto x = random_bytes(m * kk, 21, unsigned_data ? 0 : -128, unsigned_data ? 255 : 127);
    auto wt = random_bytes(n * kk, 22, -128, 127);  // [N, K], or [K, N] for matmul
    Graph g;
    NodeId in = g.add_input("x", TensorType{unsigned_data ? DataType::UInt(8) : DataType::Int(8), {m, kk}});
    std::vector<int64_t> ws = transposed ? std::vector<int64_t>{kk, n} : std::vector<int64_t>{n, kk};
    NodeId wn = g.add_constant("w", buffer_of(DataType::Int(8), ws, wt.data()));
    std::vector<int32_t> bias;
    NodeId p = g.add_op(transposed ? "matmul" : "dense", {in, wn}, {{"out_dtype", std::string("int32")}}, "fc");
    g.add_output(add_epilogue(g, p, n, false, e, 23, &bias));
    std::vector<int64_t> acc(static_cast<size_t>(m * n), 0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t q = 0; q < kk; ++q) {
          int8_t xv = x[static_cast<size_t>(i * kk + q)];
          int64_t xi = unsigned_data ? static_cast<uint8_t>(xv) : xv;
          s += xi * wt[static_cast<size_t>(transposed ? q * n + j : j * kk + q)];
        }
        acc[static_cast<size_t>(i * n + j)] = s;
      }
    std::string what = (transposed ? "matmul " : "dense ") + std::to_string(m) + "x" + std::to_string(kk) + "x" + std::to_string(n) +
                       (unsigned_data ? " u8" : " s8") + (e.on ? " requant" : "");
    check(g, x, acc, bias, n, 1, e, what, interp, "dense_int8");
  }
};

TEST_F(Int8Kernels, ConvShapes) {
  Epilogue rq{true, 9, false}, rq_relu{true, 6, true};
  std::vector<ConvCase> cases = {
      {1, 3, 15, 15, 16, 7, 7, 2, 2, 1, 1, {3, 3, 3, 3}},             // ResNet's first layer, smaller
      {1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, false, rq},  // 3x3, requantized
      {1, 20, 9, 7, 24, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}},             // channels not multiples of 4 / 16
      {2, 8, 6, 6, 16, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}},              // 1x1, batch 2
      {1, 32, 7, 7, 64, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, false, rq_relu},  // strided 1x1 (a downsample)
      {1, 5, 10, 10, 10, 3, 3, 1, 1, 2, 2, {2, 2, 2, 2}},            // dilated, 10 outputs
      {1, 12, 6, 9, 16, 3, 2, 1, 2, 1, 1, {0, 1, 1, 0}},             // asymmetric kernel, strides, pads
      {1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, false, rq},
      {1, 8, 6, 6, 16, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, true},        // uint8 data: no offset
      {1, 8, 6, 6, 16, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, false, {}, 2},   // grouped: the default path
      {1, 16, 6, 6, 16, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, false, rq, 16},  // depthwise: the default path
  };
  for (const ConvCase& k : cases) conv(k);
}

TEST_F(Int8Kernels, ConvInInterpreter) {
  conv({1, 6, 5, 5, 20, 3, 3, 2, 2, 1, 1, {1, 0, 1, 1}, false, {true, 5, true}}, true);
  conv({1, 4, 4, 4, 16, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, true}, true);
}

TEST_F(Int8Kernels, DenseShapes) {
  Epilogue rq{true, 8, false};
  dense(1, 512, 1000, false, false, {});
  dense(3, 30, 10, false, false, rq);
  dense(4, 64, 16, false, true, {});
  dense(2, 37, 33, true, false, {});  // MatMulInteger's [K, N] weight
  dense(1, 64, 10, true, false, {true, 4, true}, true);
}

// The kernels of a 3x3 int8 convolution and an int8 dense layer use vpdpbusd exactly
// when the target has VNNI.
TEST_F(Int8Kernels, VnniExactlyWhereTheTargetHasIt) {
  Graph g;
  NodeId x = g.add_input("x", TensorType{DataType::Int(8), {1, 16, 8, 8}});
  auto w = random_bytes(32 * 16 * 9, 5, -128, 127);
  NodeId wn = g.add_constant("w", buffer_of(DataType::Int(8), {32, 16, 3, 3}, w.data()));
  Attrs a{{"strides", std::vector<int64_t>{1, 1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"out_dtype", std::string("int32")}};
  NodeId c = g.add_op("conv2d", {x, wn}, a, "conv");
  NodeId flat = g.add_op("cast", {g.add_op("reshape", {c}, {{"shape", std::vector<int64_t>{1, 2048}}})}, {{"dtype", std::string("int8")}});
  auto w2 = random_bytes(16 * 2048, 6, -128, 127);
  NodeId fc = g.add_op("dense", {flat, g.add_constant("w2", buffer_of(DataType::Int(8), {16, 2048}, w2.data()))},
                       {{"out_dtype", std::string("int32")}}, "fc");
  g.add_output(fc);
  CompiledModel m = compile(g);
  std::vector<schedule::LoweredFunc> funcs;
  for (const auto& k : m.kernels) funcs.push_back(k.func);
  bool host_vnni = cpu::Target::host().has_feature("avx512vnni");
  std::string host = cpu::build(funcs, "llvm").assembly();
  std::string plain = cpu::build(funcs, "llvm -mattr=-avx512vnni,-avxvnni").assembly();
  auto count = [](const std::string& s) {
    size_t n = 0;
    for (size_t p = s.find("vpdpbusd"); p != std::string::npos; p = s.find("vpdpbusd", p + 1)) n++;
    return n;
  };
  EXPECT_EQ(count(host) > 0, host_vnni);
  EXPECT_EQ(count(plain), 0u);
}

}  // namespace
}  // namespace kiln::graph
