// The executor's memory plan on a GPU target (OpenCL on pocl here): a model's weights
// go to the device once, the tensors between its kernels stay there, and a run copies
// only the graph's input in and its output out.
#include <gtest/gtest.h>

#include "backend-gpu/device_module.h"
#include "backend-gpu/graph_backend.h"
#include "compiler/graph/executor.h"
#include "tests/e2e/test_util.h"

namespace kiln {
namespace {

TEST(GpuMemoryPlan, WeightsOnceIntermediatesStayOnTheDevice) {
  gpu::register_graph_backends();
  const ir::DataType f32 = ir::DataType::Float(32);
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {f32, {1, 8, 12, 12}});
  auto conv = [&](graph::NodeId in, int64_t c, int64_t o, uint64_t seed) {
    auto w = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{o, c, 3, 3});
    w->fill_random(seed);
    auto b = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{o, 1, 1});
    b->fill_random(seed + 1);
    graph::NodeId y = g.add_op("conv2d", {in, g.add_constant("w" + std::to_string(seed), w)},
                               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    return g.add_op("relu", {g.add_op("add", {y, g.add_constant("b" + std::to_string(seed), b)})});
  };
  graph::NodeId y = conv(conv(x, 8, 16, 1), 16, 8, 3);
  g.add_output(g.add_op("max_pool2d", {y}, {{"kernel", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}));
  graph::CompileOptions o;
  o.target = target::Target::parse("opencl");
  graph::CompiledModel m = graph::compile(g, o);
  ASSERT_EQ(m.kernels.size(), 3u);
  graph::Executor ex = graph::make_executor(m);
  const auto* module = dynamic_cast<const gpu::DeviceModule*>(&ex.kernels());
  ASSERT_NE(module, nullptr);

  auto xv = test::random_floats(8 * 12 * 12, 5);
  std::vector<float> want = test::run_graph(g, {xv}, "interp");
  const int64_t in_bytes = 8 * 12 * 12 * 4, out_bytes = 8 * 6 * 6 * 4;
  const int64_t weights = (16 * 8 * 9 + 16 + 8 * 16 * 9 + 8) * 4;
  for (int run = 0; run < 2; ++run) {
    uint64_t up = module->bytes_uploaded(), down = module->bytes_downloaded();
    ex.set_input(0, xv.data(), in_bytes);
    ex.run();
    std::vector<float> got(want.size());
    std::memcpy(got.data(), ex.output(0), got.size() * sizeof(float));
    EXPECT_LT(test::rel_error(got, want), 1e-5) << "run " << run;
    // The weights with the first run only; the two intermediate tensors never.
    EXPECT_EQ(module->bytes_uploaded() - up, static_cast<uint64_t>(in_bytes + (run == 0 ? weights : 0))) << "run " << run;
    EXPECT_EQ(module->bytes_downloaded() - down, static_cast<uint64_t>(out_bytes)) << "run " << run;
  }
}

}  // namespace
}  // namespace kiln
