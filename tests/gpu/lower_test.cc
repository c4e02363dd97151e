// GPU lowering without a GPU: schedules bound to blockIdx/threadIdx, split into
// kernels (passes::split_host_device), run thread by thread on the interpreter in
// several orders against the unscheduled program; a kernel without its barriers must
// fail in one of those orders, and kernels over a device's limits are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend-gpu/graph_backend.h"
#include "compiler/graph/gpu_schedule.h"
#include "compiler/graph/graph.h"
#include "compiler/graph/lower_group.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/split_host_device.h"
#include "compiler/schedule/lower.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "compiler/te/ops.h"
#include "tests/compiler/test_util.h"

namespace kiln {
namespace {

using te::Tensor;

struct Matmul {
  Tensor a, b, c;
  Matmul(int m, int n, int k) {
    a = te::placeholder({m, k}, ir::DataType::Float(32), "A");
    b = te::placeholder({k, n}, ir::DataType::Float(32), "B");
    c = te::matmul(a, b, "C");
  }
  std::vector<Tensor> args() const { return {a, b, c}; }
};

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The device function's outputs against the unscheduled program's, bit for bit, with
// the threads run in `order`.
::testing::AssertionResult same_on_threads(const passes::DeviceFunc& f, const std::vector<Tensor>& args,
                                           interp::ThreadOrder order, uint64_t seed = 1) {
  schedule::LoweredFunc ref = schedule::lower(schedule::create_schedule({args.back()}), args, "reference");
  auto want = test::run(ref, args, 7);
  auto have = test::make_buffers(args, 7);
  std::vector<interp::HostBuffer*> ptrs;
  for (auto& b : have) ptrs.push_back(&b);
  interp::DeviceProgram(f).run(ptrs, order, seed);
  if (!want.back().bit_equal(have.back()))
    return ::testing::AssertionFailure() << "output differs: " << want.back().first_difference(have.back());
  return ::testing::AssertionSuccess();
}

passes::DeviceFunc tiled_matmul(const Matmul& mm, const graph::GpuMatmulTile& tile, bool barriers = true) {
  auto s = schedule::create_schedule({mm.c});
  EXPECT_TRUE(graph::schedule_gpu_matmul(s, mm.c, mm.c, tile));
  schedule::LoweredFunc f = schedule::lower(s, mm.args(), "mm");
  passes::SplitOptions o;
  o.insert_barriers = barriers;
  return passes::split_host_device(f, o);
}

TEST(GpuLower, TiledMatmulIsOneKernelWithSharedTilesAndTwoBarriers) {
  Matmul mm(64, 48, 32);
  graph::GpuMatmulTile tile{32, 16, 8, 4, 8};
  passes::DeviceFunc f = tiled_matmul(mm, tile);
  ASSERT_EQ(f.kernels.size(), 1u);
  const passes::DeviceKernel& k = f.kernels[0];
  EXPECT_EQ(k.extent("blockIdx.y"), 2);
  EXPECT_EQ(k.extent("blockIdx.x"), 3);
  EXPECT_EQ(k.extent("threadIdx.y"), 8);
  EXPECT_EQ(k.extent("threadIdx.x"), 4);
  EXPECT_EQ(k.threads_per_block(), 32);
  // A's slice 32 x 8 and B's 8 x 16, float32.
  ASSERT_EQ(k.shared.size(), 2u);
  EXPECT_EQ(k.shared_bytes(), (32 * 8 + 8 * 16) * 4);
  std::string body = ir::to_string(k.body);
  // One barrier after the copies, one before the next step's copies overwrite them.
  EXPECT_EQ(count(body, passes::kBarrier), 2) << body;
  // Each thread's 4 x 4 tile in a local buffer.
  EXPECT_EQ(k.local_bytes, 4 * 4 * 4);
  EXPECT_EQ(k.params, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(f.buffers[2].written);
  EXPECT_FALSE(f.buffers[0].written);
}

TEST(GpuLower, TiledMatmulMatchesInEveryThreadOrder) {
  Matmul mm(64, 48, 32);
  passes::DeviceFunc f = tiled_matmul(mm, {32, 16, 8, 4, 8});
  EXPECT_TRUE(same_on_threads(f, mm.args(), interp::ThreadOrder::Forward));
  EXPECT_TRUE(same_on_threads(f, mm.args(), interp::ThreadOrder::Reverse));
  for (uint64_t seed : {1, 2, 3}) EXPECT_TRUE(same_on_threads(f, mm.args(), interp::ThreadOrder::Shuffled, seed));
}

TEST(GpuLower, WithoutBarriersSomeThreadOrderFails) {
  Matmul mm(32, 32, 32);
  passes::DeviceFunc f = tiled_matmul(mm, {16, 16, 4, 4, 8}, /*barriers=*/false);
  EXPECT_EQ(count(ir::to_string(f.kernels[0].body), passes::kBarrier), 0);
  // In order, thread 0 reads the tile before the others have copied their parts.
  EXPECT_FALSE(same_on_threads(f, mm.args(), interp::ThreadOrder::Forward));
  EXPECT_FALSE(same_on_threads(f, mm.args(), interp::ThreadOrder::Reverse));
  EXPECT_FALSE(same_on_threads(f, mm.args(), interp::ThreadOrder::Shuffled, 5));
}

TEST(GpuLower, ElementwiseRootWithGuardedTail) {
  // 1000 elements over 256 threads: the last block's extra threads do nothing.
  Tensor a = te::placeholder({10, 100}, ir::DataType::Float(32), "A");
  Tensor b = te::elementwise(a, [](ir::Expr x) { return x * 2.0f + 1.0f; }, "B");
  auto s = schedule::create_schedule({b});
  target::MachineTraits gpu;
  gpu.gpu_threads = 256;
  graph::schedule_gpu_root(s, b, gpu);
  passes::DeviceFunc f = passes::split_host_device(schedule::lower(s, {a, b}, "ew"));
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_EQ(f.kernels[0].extent("blockIdx.x"), 4);
  EXPECT_EQ(f.kernels[0].extent("threadIdx.x"), 256);
  EXPECT_TRUE(f.kernels[0].shared.empty());
  EXPECT_TRUE(same_on_threads(f, {a, b}, interp::ThreadOrder::Shuffled));
}

TEST(GpuLower, ReductionInsideItsConsumersThreads) {
  // A row sum computed by the threads of the elementwise stage that reads it, into a
  // local register: one kernel.
  Tensor a = te::placeholder({64, 40}, ir::DataType::Float(32), "A");
  ir::IterVar k = te::reduce_axis(40, "k");
  Tensor sum = te::compute({64}, [&](ir::Var i) { return te::sum(a(i, k->var), {k}); }, "S");
  Tensor out = te::elementwise(sum, [](ir::Expr x) { return x * 0.5f; }, "O");
  auto s = schedule::create_schedule({out});
  target::MachineTraits gpu;
  gpu.gpu_threads = 32;
  graph::schedule_gpu_group(s, {out}, gpu);
  passes::DeviceFunc f = passes::split_host_device(schedule::lower(s, {a, out}, "rowsum"));
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_EQ(f.kernels[0].local_bytes, 4);
  EXPECT_TRUE(same_on_threads(f, {a, out}, interp::ThreadOrder::Reverse));
}

TEST(GpuLower, TwoRootStagesAreTwoKernelsWithATemporary) {
  Tensor a = te::placeholder({64, 40}, ir::DataType::Float(32), "A");
  ir::IterVar k = te::reduce_axis(40, "k");
  Tensor mx = te::compute({64}, [&](ir::Var i) { return te::max_reduce(a(i, k->var), {k}); }, "M");
  ir::IterVar k2 = te::reduce_axis(40, "k2");
  Tensor out = te::compute({64}, [&](ir::Var i) { return te::sum(a(i, k2->var) - mx(i), {k2}); }, "O");
  auto s = schedule::create_schedule({out});
  target::MachineTraits gpu;
  gpu.gpu_threads = 16;
  graph::schedule_gpu_root(s, mx, gpu);
  graph::schedule_gpu_root(s, out, gpu);
  passes::DeviceFunc f = passes::split_host_device(schedule::lower(s, {a, out}, "two"));
  ASSERT_EQ(f.kernels.size(), 2u);
  ASSERT_EQ(f.buffers.size(), 3u);
  EXPECT_FALSE(f.buffers[2].is_arg);
  EXPECT_EQ(f.buffers[2].elements, 64);
  EXPECT_TRUE(same_on_threads(f, {a, out}, interp::ThreadOrder::Shuffled, 9));
}

// A convolution with a bias and a relu, lowered by lower_group with the GPU's default
// schedules, against the same group with the CPU's, on the interpreter.
void check_conv_group(int64_t c, int64_t o, int64_t hw, int64_t k, int64_t stride, int64_t pad, int64_t groups) {
  const ir::DataType f32 = ir::DataType::Float(32);
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {f32, {1, c, hw, hw}});
  auto weight = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{o, c / groups, k, k});
  weight->fill_random(3);
  auto bias = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{o, 1, 1});
  bias->fill_random(4);
  graph::NodeId y = g.add_op("conv2d", {x, g.add_constant("w", weight)},
                             {{"strides", std::vector<int64_t>{stride, stride}},
                              {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                              {"groups", groups}});
  graph::NodeId b = g.add_op("add", {y, g.add_constant("b", bias)});
  graph::NodeId r = g.add_op("relu", {b});
  g.add_output(r);
  target::MachineTraits gpu;
  gpu.gpu_threads = 64;
  graph::LoweredGroup lg = graph::lower_group(g, {y, b, r}, "conv", {}, {}, gpu);
  graph::LoweredGroup ref = graph::lower_group(g, {y, b, r}, "conv");
  passes::DeviceFunc f = passes::split_host_device(lg.func);
  ASSERT_EQ(f.kernels.size(), 1u) << "the convolution is computed by its epilogue's threads";
  std::vector<interp::HostBuffer> want, have;
  for (graph::NodeId id : lg.inputs) {
    const graph::Node& n = g.node(id);
    want.push_back(n.is_constant() ? *n.value : interp::HostBuffer(f32, n.type.shape));
    if (!n.is_constant()) want.back().fill_random(5);
  }
  want.emplace_back(f32, g.type(r).shape);
  have = want;
  std::vector<interp::HostBuffer*> pw, ph;
  for (auto& v : want) pw.push_back(&v);
  for (auto& v : have) ph.push_back(&v);
  interp::run(ref.func, pw);
  interp::DeviceProgram(f).run(ph, interp::ThreadOrder::Shuffled, 3);
  EXPECT_LT(want.back().max_abs_diff(have.back()), 1e-5) << want.back().first_difference(have.back());
}

TEST(GpuLower, ConvolutionGroupsMatchTheCpuSchedules) {
  check_conv_group(8, 12, 10, 3, 1, 1, 1);   // 3x3, channel tiles of 4, pixel tiles of 2 (10 = 2 x 5)
  check_conv_group(6, 10, 9, 3, 2, 1, 1);    // strided to 5x5: channel tiles of 2, single pixels
  check_conv_group(16, 16, 8, 3, 1, 1, 16);  // depthwise
  check_conv_group(16, 8, 7, 1, 1, 0, 1);    // 1x1
}

// Every lowered program of this file's GPU schedules, built by the "opencl" backend
// and run on OpenCL (pocl here), against the unscheduled program on the interpreter.
TEST(GpuLower, LoweredProgramsRunOnOpenCL) {
  gpu::register_graph_backends();
  target::MachineTraits gpu;
  gpu.gpu_threads = 32;
  struct Case {
    schedule::Schedule s;
    std::vector<Tensor> args;
  };
  std::vector<Case> cases;
  Matmul mm(64, 48, 32);
  cases.push_back({schedule::create_schedule({mm.c}), mm.args()});
  ASSERT_TRUE(graph::schedule_gpu_matmul(cases.back().s, mm.c, mm.c, {32, 16, 8, 4, 8}));
  Tensor a = te::placeholder({10, 100}, ir::DataType::Float(32), "A");
  Tensor ew = te::elementwise(a, [](ir::Expr x) { return x * 2.0f + 1.0f; }, "B");
  cases.push_back({schedule::create_schedule({ew}), {a, ew}});
  graph::schedule_gpu_root(cases.back().s, ew, gpu);
  ir::IterVar k = te::reduce_axis(100, "k");
  Tensor mx = te::compute({10}, [&](ir::Var i) { return te::max_reduce(a(i, k->var), {k}); }, "M");
  ir::IterVar k2 = te::reduce_axis(100, "k2");
  Tensor sm = te::compute({10}, [&](ir::Var i) { return te::sum(a(i, k2->var) - mx(i), {k2}); }, "S");
  Tensor out = te::elementwise(sm, [](ir::Expr x) { return x * 0.5f; }, "O");
  cases.push_back({schedule::create_schedule({out}), {a, out}});
  graph::schedule_gpu_group(cases.back().s, {out}, gpu);
  for (Case& c : cases) {
    schedule::LoweredFunc f = schedule::lower(c.s, c.args, "prog");
    schedule::LoweredFunc ref = schedule::lower(schedule::create_schedule({c.args.back()}), c.args, "reference");
    auto want = test::run(ref, c.args, 3);
    auto have = test::make_buffers(c.args, 3);
    std::vector<void*> ptrs;
    for (auto& h : have) ptrs.push_back(h.data());
    target::make_backend("opencl")->build({f}, "opencl")->call(0, ptrs.data());
    EXPECT_LT(want.back().max_abs_diff(have.back()), 1e-4) << c.args.back()->name << ": " << want.back().first_difference(have.back());
  }
}

std::string split_error(const schedule::LoweredFunc& f, const passes::SplitOptions& o = {}) {
  try {
    passes::split_host_device(f, o);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuLower, TooManyThreadsPerBlockIsRefused) {
  Tensor a = te::placeholder({4096}, ir::DataType::Float(32), "A");
  Tensor b = te::elementwise(a, [](ir::Expr x) { return x + 1.0f; }, "B");
  auto s = schedule::create_schedule({b});
  auto [o, i] = s[b].split(b->axis[0], 2048);
  s[b].bind(o, "blockIdx.x");
  s[b].bind(i, "threadIdx.x");
  std::string e = split_error(schedule::lower(s, {a, b}, "big"));
  EXPECT_NE(e.find("threadIdx.x has extent 2048"), std::string::npos) << e;
  EXPECT_NE(e.find("i.inner"), std::string::npos) << e;  // the loop bound to it
  passes::SplitOptions small;
  small.limits.max_threads_per_block = 1024;
  small.limits.max_block = {4096, 1024, 64};
  e = split_error(schedule::lower(s, {a, b}, "big"), small);
  EXPECT_NE(e.find("2048 threads per block"), std::string::npos) << e;
}

TEST(GpuLower, TooMuchSharedMemoryIsRefused) {
  Matmul mm(128, 128, 64);
  auto s = schedule::create_schedule({mm.c});
  ASSERT_TRUE(graph::schedule_gpu_matmul(s, mm.c, mm.c, {128, 128, 16, 16, 64}));
  passes::SplitOptions o;
  o.limits.max_shared_bytes = 48 << 10;  // needs 2 x 128 x 64 x 4 = 64 KiB
  std::string e = split_error(schedule::lower(s, mm.args(), "mm"), o);
  EXPECT_NE(e.find("65536 bytes of shared memory"), std::string::npos) << e;
  EXPECT_NE(e.find(".shared"), std::string::npos) << e;  // names the buffers
}

TEST(GpuLower, UnboundCodeIsRefused) {
  Tensor a = te::placeholder({16}, ir::DataType::Float(32), "A");
  Tensor b = te::elementwise(a, [](ir::Expr x) { return x + 1.0f; }, "B");
  auto s = schedule::create_schedule({b});
  std::string e = split_error(schedule::lower(s, {a, b}, "plain"));
  EXPECT_NE(e.find("not inside any loop bound to blockIdx/threadIdx"), std::string::npos) << e;
}

TEST(GpuLower, VectorCodeIsRefused) {
  Tensor a = te::placeholder({64}, ir::DataType::Float(32), "A");
  Tensor b = te::elementwise(a, [](ir::Expr x) { return x + 1.0f; }, "B");
  auto s = schedule::create_schedule({b});
  auto [o, i] = s[b].split(b->axis[0], 4);
  auto [oo, oi] = s[b].split(o, 4);
  s[b].bind(oo, "blockIdx.x");
  s[b].bind(oi, "threadIdx.x");
  s[b].vectorize(i);
  std::string e = split_error(schedule::lower(s, {a, b}, "vec"));
  EXPECT_NE(e.find("vector code"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln
