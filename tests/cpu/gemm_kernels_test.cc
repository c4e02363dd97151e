// The CPU's default GEMMs: for constant weights (AlterLayout's matmul_packed, scheduled by
// graph::schedule_matmul_packed from the target's registers): dense and MatMul layers
// of many shapes, alone and with a fused epilogue (bias, relu, a residual), on the host
// and on narrower targets (AVX2's 16 registers, SSE), against the reference interpreter;
// and for matmuls of two computed operands (graph::schedule_matmul).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "backend-cpu/module.h"
#include "compiler/graph/executor.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/ir/printer.h"
#include "tests/cpu/kernel_test_util.h"

namespace kiln::graph {
namespace {

const ir::DataType f32 = ir::DataType::Float(32);

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

ConstData constant(std::vector<int64_t> shape, uint32_t seed) {
  auto b = std::make_shared<interp::HostBuffer>(f32, shape);
  auto v = random_floats(b->size(), seed);
  std::memcpy(b->data(), v.data(), v.size() * sizeof(float));
  return b;
}

enum class Epilogue { None, BiasRelu, Residual };

// y = x[M, K] . W (dense [N, K] or matmul [K, N]) with an epilogue.
Graph gemm_graph(int64_t m, int64_t n, int64_t k, bool dense, Epilogue e) {
  Graph g;
  NodeId x = g.add_input("x", {f32, {m, k}});
  NodeId y = dense ? g.add_op("dense", {x, g.add_constant("w", constant({n, k}, 1))})
                   : g.add_op("matmul", {x, g.add_constant("w", constant({k, n}, 1))});
  if (e == Epilogue::BiasRelu) y = g.add_op("relu", {g.add_op("add", {y, g.add_constant("b", constant({n}, 2))})});
  if (e == Epilogue::Residual) y = g.add_op("add", {y, g.add_input("r", {f32, {m, n}})});
  g.add_output(y, "y");
  return g;
}

std::vector<float> run(const Graph& g, const std::vector<std::vector<float>>& in, const std::string& backend,
                       const std::string& target, int* packed = nullptr, std::vector<std::string>* kernels = nullptr) {
  CompileOptions o;
  if (backend == "cpu") o.target = target::Target::parse(target);
  CompiledModel m = compile(g, o);
  if (packed) {
    *packed = 0;
    for (const auto& node : m.graph.nodes()) *packed += node.op == "matmul_packed";
  }
  if (kernels)
    for (const auto& k : m.kernels) kernels->push_back(k.func.name);
  Executor ex = make_executor(m, backend, backend == "cpu" ? target : "");
  for (size_t i = 0; i < in.size(); ++i) ex.set_input(i, in[i].data(), static_cast<int64_t>(in[i].size() * sizeof(float)));
  ex.run();
  std::vector<float> out(static_cast<size_t>(ex.output_bytes(0) / sizeof(float)));
  std::memcpy(out.data(), ex.output(0), out.size() * sizeof(float));
  return out;
}

double max_error(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double e = 0, scale = 1e-6;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    e = std::max(e, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return e / scale;
}

struct Shape {
  int64_t m, n, k;
};

class GemmKernels : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

TEST_P(GemmKernels, MatchTheInterpreter) {
  const std::string target = GetParam();
  for (Shape s : {Shape{1, 1000, 64}, Shape{3, 96, 40}, Shape{8, 10, 7}, Shape{128, 768, 64}, Shape{49, 128, 96},
                  Shape{16, 1009, 8}, Shape{64, 256, 257}, Shape{197, 128, 96}}) {
    for (bool dense : {true, false}) {
      for (Epilogue e : {Epilogue::None, Epilogue::BiasRelu, Epilogue::Residual}) {
        Graph g = gemm_graph(s.m, s.n, s.k, dense, e);
        std::vector<std::vector<float>> in{random_floats(s.m * s.k, 3)};
        if (e == Epilogue::Residual) in.push_back(random_floats(s.m * s.n, 4));
        int packed = 0;
        std::vector<float> got = run(g, in, "cpu", target, &packed);
        std::string what = ::testing::PrintToString(std::vector<int64_t>{s.m, s.n, s.k}) + (dense ? " dense" : " matmul") +
                           " epilogue " + std::to_string(static_cast<int>(e)) + " on " + target;
        // Every shape whose columns split into panels is packed (1009 is prime: a plain matmul).
        EXPECT_EQ(packed, s.n == 1009 ? 0 : 1) << what;
        EXPECT_LT(max_error(got, run(g, in, "interp", "")), 1e-5) << what;
      }
    }
  }
}

// Both operands computed (attention's Q.K^T / sqrt(d) and scores.V): graph::schedule_matmul's
// register tiles, batch dimensions in parallel, the epilogue computed from the tile;
// columns that are not whole vectors keep the plain schedule.
TEST_P(GemmKernels, BatchMatmulsMatchTheInterpreter) {
  const std::string target = GetParam();
  struct Case {
    std::vector<int64_t> a, b;
    bool scale;
  };
  for (const Case& c : {Case{{12, 32, 64}, {12, 64, 32}, true}, Case{{2, 3, 5, 16}, {2, 3, 16, 48}, false},
                        Case{{4, 7, 9}, {9, 20}, true}, Case{{8, 128}, {128, 64}, true}, Case{{3, 6, 40}, {1, 40, 96}, false},
                        Case{{3, 197, 32}, {3, 32, 197}, true}, Case{{2, 197, 197}, {2, 197, 64}, false}}) {
    Graph g;
    NodeId a = g.add_input("a", {f32, c.a});
    NodeId b = g.add_input("b", {f32, c.b});
    NodeId y = g.add_op("matmul", {g.add_op("sigmoid", {a}), b});
    if (c.scale) y = g.add_op("divide", {y, g.add_constant("d", constant({1}, 7))});
    g.add_output(y, "y");
    int64_t na = 1, nb = 1;
    for (int64_t d : c.a) na *= d;
    for (int64_t d : c.b) nb *= d;
    std::vector<std::vector<float>> in{random_floats(na, 3), random_floats(nb, 4)};
    std::string what = ::testing::PrintToString(c.a) + " x " + ::testing::PrintToString(c.b) + " on " + target;
    EXPECT_LT(max_error(run(g, in, "cpu", target), run(g, in, "interp", "")), 1e-5) << what;
  }
}

std::string target_name(const ::testing::TestParamInfo<std::string>& i) {
  static const char* const names[] = {"host", "avx2", "sse", "small_l2"};
  return names[i.index];
}

// A transformer layer's pieces as ONNX exporters write them on [batch, tokens,
// features]: a linear layer as a 2-d product between reshapes with its bias, a GELU and
// the residual on the 3-d side (SinkReshape and FuseOps make them all the product's
// epilogue: one kernel, no reshape kernels), a layer norm and a softmax over rows of
// 256 (reductions in 16 partials).
TEST_P(GemmKernels, TransformerPiecesMatchTheInterpreter) {
  const std::string target = GetParam();
  const int64_t tokens = 16, d = 256;
  Graph g;
  NodeId x = g.add_input("x", {f32, {1, tokens, d}});
  NodeId flat = g.add_op("reshape", {x}, {{"shape", std::vector<int64_t>{tokens, d}}});
  NodeId mm = g.add_op("matmul", {flat, g.add_constant("w", constant({d, d}, 1))});
  NodeId back = g.add_op("reshape", {mm}, {{"shape", std::vector<int64_t>{1, tokens, d}}});
  auto scalar = [&](const char* name, float v) {
    auto c = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{});
    std::memcpy(c->data(), &v, sizeof v);
    return g.add_constant(name, c);
  };
  // GELU as PyTorch exports it: b * 0.5 * (1 + erf(b / sqrt(2))), b used twice.
  NodeId b = g.add_op("add", {g.add_constant("b", constant({d}, 2)), back});
  NodeId erf = g.add_op("erf", {g.add_op("divide", {b, scalar("sqrt2", std::sqrt(2.0f))})});
  NodeId gelu = g.add_op("multiply", {g.add_op("multiply", {b, g.add_op("add", {erf, scalar("one", 1)})}), scalar("half", 0.5f)});
  NodeId y = g.add_op("add", {x, gelu});
  Attrs last{{"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t{1}}};
  NodeId centered = g.add_op("subtract", {y, g.add_op("mean", {y}, last)});
  NodeId var = g.add_op("mean", {g.add_op("multiply", {centered, centered})}, last);
  auto eps = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{1});
  const float eps_value = 1e-5f;
  std::memcpy(eps->data(), &eps_value, sizeof eps_value);
  NodeId norm = g.add_op("divide", {centered, g.add_op("sqrt", {g.add_op("add", {var, g.add_constant("eps", eps)})})});
  g.add_output(g.add_op("softmax", {norm}, {{"axis", int64_t{-1}}}), "y");
  std::vector<std::vector<float>> in{random_floats(tokens * d, 3)};
  CompileOptions o;
  o.target = target::Target::parse(target);
  CompiledModel m = compile(g, o);
  int products = 0;
  for (const auto& k : m.kernels) {
    EXPECT_EQ(k.func.name.find("reshape"), std::string::npos) << k.func.name;
    products += k.func.name.find("matmul_packed_add") != std::string::npos;
  }
  EXPECT_EQ(products, 1) << "the product with its bias, GELU and residual";
  EXPECT_EQ(m.kernels.size(), 4u) << "the product, the layer norm's two reductions, the softmax";
  CompileOptions reference;
  reference.optimize = reference.fuse = false;
  EXPECT_LT(max_error(run(g, in, "cpu", target), run(g, in, "interp", "")), 1e-5) << target;
  Executor ex = make_executor(compile(g, reference), "interp", "");
  ex.set_input(0, in[0].data(), static_cast<int64_t>(in[0].size() * sizeof(float)));
  ex.run();
  std::vector<float> want(static_cast<size_t>(tokens * d));
  std::memcpy(want.data(), ex.output(0), want.size() * sizeof(float));
  EXPECT_LT(max_error(run(g, in, "cpu", target), want), 1e-5) << target << ", against one operator per kernel";
}

INSTANTIATE_TEST_SUITE_P(Targets, GemmKernels,
                         ::testing::Values("llvm", "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell",
                                           "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64", "llvm -l2-cache=64K"),
                         target_name);

// Rows with no divisor near the register tile's (ViT's 197 tokens): a dense layer of
// constant weights takes whole register tiles and a partial last one (the full tiles in
// a loop with no guard, loop partitioning leaving the guards to a copy of its own for
// the last tile); products of two computed operands (attention's Q.K^T, rows and
// columns, and its scores.V, rows) are computed zero-padded to whole tiles, columns to
// whole vectors, and sliced back.
TEST(GemmKernels, AwkwardRowsEndInAPartialTileOrArePadded) {
  cpu::register_graph_backend();
  Graph g;
  NodeId x = g.add_input("x", {f32, {197, 96}});
  NodeId q = g.add_input("q", {f32, {3, 197, 32}});
  NodeId kt = g.add_input("kt", {f32, {3, 32, 197}});
  NodeId v = g.add_input("v", {f32, {3, 197, 64}});
  // Two panels of 48 columns with AVX-512 (three vectors of 16).
  NodeId d = g.add_op("add", {g.add_op("dense", {x, g.add_constant("w", constant({96, 96}, 1))}), g.add_constant("b", constant({96}, 2))});
  NodeId scores = g.add_op("softmax", {g.add_op("matmul", {q, kt})}, {{"axis", int64_t{-1}}});
  g.add_output(d, "dense");
  g.add_output(g.add_op("matmul", {scores, v}), "attention");
  // Wide enough that its panels alone are the parallel work (the one above: its row
  // tiles too).
  g.add_output(g.add_op("dense", {x, g.add_constant("w_wide", constant({640, 96}, 7))}), "wide");
  CompileOptions o;
  o.target = target::Target::parse("llvm");
  CompiledModel m = compile(g, o);
  int products = 0;
  for (const auto& n : m.graph.nodes()) {
    if (n.op != "matmul" && n.op != "matmul_packed") continue;
    ++products;
    const auto& s = n.type.shape;
    if (n.op == "matmul_packed") {
      EXPECT_EQ(s[0], 197) << n.name << ": rows as they are";
      continue;
    }
    EXPECT_EQ(s[s.size() - 2] % 4, 0) << n.name << ": rows " << s[s.size() - 2];
    EXPECT_EQ(s.back() % 16, 0) << n.name << ": columns " << s.back();
  }
  int packed = 0;
  for (const auto& k : m.kernels) {
    if (k.func.name.find("matmul_packed") == std::string::npos) continue;
    ++packed;
    std::string ir = ir::to_string(k.func.body);
    EXPECT_EQ(ir.find("if ("), std::string::npos) << k.func.name << ": no guard left\n" << ir;
    size_t first = ir.find("allocate matmul_packed");
    EXPECT_TRUE(first != std::string::npos && ir.find("allocate matmul_packed", first + 1) != std::string::npos)
        << k.func.name << ": the last tile's loop of its own\n" << ir;
  }
  EXPECT_EQ(packed, 2);
  EXPECT_EQ(products, 4);
  std::vector<std::vector<float>> in{random_floats(197 * 96, 3), random_floats(3 * 197 * 32, 4), random_floats(3 * 32 * 197, 5),
                                     random_floats(3 * 197 * 64, 6)};
  for (size_t out : {0, 1, 2}) {
    Executor cpu = make_executor(m, "cpu", "llvm");
    CompiledModel ref = compile(g, {});
    Executor interp = make_executor(ref, "interp", "");
    for (Executor* e : {&cpu, &interp}) {
      for (size_t i = 0; i < in.size(); ++i) e->set_input(i, in[i].data(), static_cast<int64_t>(in[i].size() * sizeof(float)));
      e->run();
    }
    std::vector<float> got(static_cast<size_t>(cpu.output_bytes(out) / sizeof(float))), want(got.size());
    ASSERT_EQ(interp.output_bytes(out), cpu.output_bytes(out));
    std::memcpy(got.data(), cpu.output(out), got.size() * sizeof(float));
    std::memcpy(want.data(), interp.output(out), want.size() * sizeof(float));
    EXPECT_LT(max_error(got, want), 1e-5) << "output " << out;
  }
}

// Panels outermost with enough row tiles: each step of the reduction fetches a line of
// the next panel of the packed weight, never outside it (the last panel fetches its own
// lines); one row (a matrix-vector product): each step fetches its lines 8 KiB ahead,
// up to the weight's last; no prefetch where rows and panels run fused in parallel or
// rows are few.
TEST(GemmKernels, APanelFetchesTheNextPanelOfTheWeight) {
  cpu::register_graph_backend();
  struct Case {
    Shape s;
    bool prefetch;
  };
  for (const Case& c : {Case{{128, 768, 64}, true}, Case{{128, 3072, 768}, true}, Case{{1, 1000, 64}, true}, Case{{1, 1000, 1280}, true},
                        Case{{64, 256, 257}, false}}) {
    Graph g = gemm_graph(c.s.m, c.s.n, c.s.k, false, Epilogue::BiasRelu);
    CompileOptions o;
    o.target = target::Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512");
    CompiledModel m = compile(g, o);
    std::string what = ::testing::PrintToString(std::vector<int64_t>{c.s.m, c.s.n, c.s.k});
    int fetches = 0;
    for (const auto& k : m.kernels) {
      test_util::PrefetchReach r = test_util::prefetch_reach(k.func);
      fetches += r.count;
      if (r.count == 0) continue;
      EXPECT_GE(r.lowest, 0) << what;
      EXPECT_GT(r.size, 0) << what << ": the prefetch reads a kernel argument";
      EXPECT_LT(r.highest, r.size) << what;
      EXPECT_GE(r.highest, r.size - 16) << what << ": the last panel's last line is reached";
    }
    EXPECT_EQ(fetches > 0, c.prefetch) << what;
    std::vector<std::vector<float>> in{random_floats(c.s.m * c.s.k, 3)};
    EXPECT_LT(max_error(run(g, in, "cpu", "llvm"), run(g, in, "interp", "")), 1e-5) << what;
  }
}

// The default tile unrolls the reduction as the target's core runs it fastest
// (MachineTraits::gemm_k_unroll): by 8 on Intel's, by 4 on AMD's Zen 5.
TEST(GemmKernels, TheReductionUnrollFollowsTheCore) {
  cpu::register_graph_backend();
  Graph g = gemm_graph(128, 768, 768, false, Epilogue::BiasRelu);
  for (auto [cpu, steps] : std::vector<std::pair<std::string, int>>{{"sapphirerapids", 96}, {"znver5", 192}}) {
    CompileOptions o;
    o.target = target::Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=" + cpu);
    CompiledModel m = compile(g, o);
    ASSERT_EQ(m.kernels.size(), 1u);
    std::string body = ir::to_string(m.kernels[0].func.body);
    EXPECT_NE(body.find("for (k.outer, 0, " + std::to_string(steps) + ")"), std::string::npos) << cpu << "\n" << body;
  }
}

// A panel of three vectors (96 columns with AVX-512: panels of 48) is computed in
// vectors of 16 lanes: LLVM built a 48-lane vector an element at a time, 7x slower.
// The same results as the interpreter.
TEST(GemmKernels, PanelsOfThreeVectorsAreWholeVectors) {
  cpu::register_graph_backend();
  const std::string target = "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512";
  Graph g = gemm_graph(64, 96, 64, false, Epilogue::BiasRelu);
  CompileOptions o;
  o.target = target::Target::parse(target);
  CompiledModel m = compile(g, o);
  ASSERT_EQ(m.kernels.size(), 1u);
  bool panels_of_48 = false;
  for (const auto& n : m.graph.nodes())
    panels_of_48 = panels_of_48 || (n.op == "matmul_packed" && m.graph.type(n.inputs[1]).shape.back() == 48);
  EXPECT_TRUE(panels_of_48) << m.graph;
  std::string body = ir::to_string(m.kernels[0].func.body);
  EXPECT_EQ(body.find(", 1, 48)"), std::string::npos) << body;
  EXPECT_NE(body.find(", 1, 16)"), std::string::npos) << body;
  auto x = random_floats(64 * 64, 3);
  EXPECT_LT(max_error(run(g, {x}, "cpu", target), run(g, {x}, "interp", "")), 1e-5);
}

// The reduction loop's addresses are 64-bit (the codegen emits index arithmetic with
// nsw, so LLVM widens it): no sign extension per step, except the prefetch's, whose
// index is clamped by a min.
TEST(GemmKernels, TheReductionLoopWalksAddressesIn64Bits) {
  cpu::register_graph_backend();
  const char* target = "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512";
  Graph g = gemm_graph(128, 768, 768, false, Epilogue::BiasRelu);
  CompileOptions o;
  o.target = target::Target::parse(target);
  CompiledModel m = compile(g, o);
  ASSERT_EQ(m.kernels.size(), 1u);
  std::istringstream ir(cpu::build({m.kernels[0].func}, target).llvm_ir());
  std::string line, block;
  int reduction_blocks = 0, sext = 0, prefetch = 0;
  while (std::getline(ir, line)) {
    size_t colon = line.find(':');  // a block label: "name:   ; preds = ..."
    bool label = colon != std::string::npos && colon > 0 && line.find_first_of(" ;=") > colon;
    if (label) block = line.substr(0, colon);
    if (block.rfind("body_k", 0) != 0) continue;
    reduction_blocks += label;
    sext += line.find(" = sext i32 ") != std::string::npos;
    prefetch += line.find("@llvm.prefetch") != std::string::npos;
  }
  EXPECT_GE(reduction_blocks, 1) << "no reduction loop in\n" << cpu::build({m.kernels[0].func}, target).llvm_ir();
  EXPECT_LE(sext, prefetch) << cpu::build({m.kernels[0].func}, target).llvm_ir();
}

TEST(GemmKernels, LongReductionsAreSplitInChunks) {
  cpu::register_graph_backend();
  target::MachineTraits small{512, 32, 32 << 10, 64 << 10};
  target::MachineTraits l2_2m{512, 32, 48 << 10, 2 << 20}, l2_1m{512, 32, 48 << 10, 1 << 20};
  EXPECT_EQ(reduction_chunk(128, 768, 64, l2_2m), 768);
  EXPECT_EQ(reduction_chunk(128, 3072, 64, l2_2m), 1536);
  EXPECT_EQ(reduction_chunk(16, 2048, 64, small), 512);
  EXPECT_EQ(reduction_chunk(4096, 4096, 64, small), 4096) << "no chunk of 512 or more fits: not split";
  EXPECT_EQ(reduction_chunk(1024, 1024, 64, l2_1m), 1024) << "a 256 KiB panel fits in a quarter of L2; the rows are blocked";
  EXPECT_EQ(reduction_chunk(4096, 4096, 64, l2_1m), 1024) << "rows never fit: chunks whose panel fits";
  EXPECT_EQ(reduction_chunk(128, 3072, 64, l2_1m), 1024) << "rows and panel fit";
  Graph g = gemm_graph(16, 96, 2048, true, Epilogue::BiasRelu);
  std::vector<std::vector<float>> in{random_floats(16 * 2048, 5)};
  int packed = 0;
  std::vector<std::string> kernels;
  std::vector<float> got = run(g, in, "cpu", "llvm -l2-cache=64K", &packed, &kernels);
  EXPECT_EQ(packed, 4) << "four chunks of 512";
  // Each chunk's product reads its slice of the rows in place (fuse_slice_product): four
  // kernels, no copies.
  EXPECT_EQ(kernels.size(), 4u) << ::testing::PrintToString(kernels);
  for (const std::string& k : kernels) EXPECT_EQ(k.find("strided_slice"), std::string::npos) << k;
  EXPECT_LT(max_error(got, run(g, in, "interp", "")), 1e-5);
}

}  // namespace
}  // namespace kiln::graph
