// Tuning on a GPU target (OpenCL on pocl here): the GPU templates' spaces, candidates
// measured on the device in worker processes, and the records applied when a graph is
// compiled for the target, with results equal to the interpreter's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "backend-gpu/graph_backend.h"
#include "compiler/graph/executor.h"
#include "tests/e2e/test_util.h"
#include "support/error.h"
#include "tuner/apply.h"
#include "tuner/measure.h"
#include "tuner/records.h"
#include "tuner/template.h"
#include "tuner/tuner.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace tuner;

class GpuTune : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gpu::register_graph_backends(); }
};

TEST_F(GpuTune, TemplatesForEachGpuTargetAndTheirSpaces) {
  Workload conv = parse_workload("conv2d_nchw:C=8,H=10,W=10,O=16,KH=3,pad=1");
  EXPECT_EQ(conv.key(), "conv2d_nchw:N=1,C=8,H=10,W=10,O=16,KH=3,KW=3,stride=1,pad=1,groups=1");
  for (const char* kind : {"opencl", "cuda"}) {
    ASSERT_EQ(templates_for("conv2d_nchw", kind).size(), 1u) << kind;
    ASSERT_EQ(templates_for("dense", kind).size(), 1u) << kind;
  }
  // Channel tiles 1, 2, 4, 8 x pixel tiles 1, 2, 5 x 3 thread counts.
  EXPECT_EQ(find_template("conv2d_nchw.opencl").space(conv).size(), 4 * 3 * 3);
  // A product no larger tile divides (ResNet-18's classifier, 1 x 1000 x 512) still has tiles.
  ConfigSpace fc = find_template("dense.opencl").space(parse_workload("dense:M=1,N=1000,K=512"));
  EXPECT_GT(fc.size(), 10);
  EXPECT_THROW(parse_workload("conv2d_nchw:C=8,H=10,W=10,O=16,KH=3,groups=3"), Error);
}

TEST_F(GpuTune, TunedRecordsScheduleTheModelOnTheTarget) {
  // A depthwise and a regular convolution, each with a bias and a relu.
  const ir::DataType f32 = ir::DataType::Float(32);
  graph::Graph g;
  graph::NodeId x = g.add_input("x", {f32, {1, 8, 12, 12}});
  auto conv = [&](graph::NodeId in, int64_t c, int64_t o, int64_t groups, uint64_t seed) {
    auto w = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{o, c / groups, 3, 3});
    w->fill_random(seed);
    auto b = std::make_shared<interp::HostBuffer>(f32, std::vector<int64_t>{o, 1, 1});
    b->fill_random(seed + 1);
    graph::NodeId y = g.add_op("conv2d", {in, g.add_constant("w" + std::to_string(seed), w)},
                               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", groups}});
    return g.add_op("relu", {g.add_op("add", {y, g.add_constant("b" + std::to_string(seed), b)})});
  };
  g.add_output(conv(conv(x, 8, 8, 8, 1), 8, 16, 1, 3));
  graph::CompileOptions o;
  o.target = target::Target::parse("opencl");
  auto tasks = model_workloads(g, o.target);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].first.key(), "conv2d_nchw:N=1,C=8,H=12,W=12,O=8,KH=3,KW=3,stride=1,pad=1,groups=8");

  fs::path path = fs::temp_directory_path() / ("kiln-gpu-tune-" + std::to_string(getpid()) + ".jsonl");
  fs::remove(path);
  MeasureOptions mo;
  mo.target = "opencl";
  mo.timeout_s = 60;
  mo.repeat = 2;
  LocalPool pool(1, mo);
  TuneOptions to;
  to.tuner = "random";
  to.trials = 3;
  to.records = path.string();
  for (const auto& [w, where] : tasks) {
    TuneResult r = tune(*templates_for(w.op, "opencl").at(0), w, pool, to);
    EXPECT_EQ(r.errors, 0) << w.key();
    ASSERT_TRUE(r.best.has_value()) << w.key();
    EXPECT_GT(r.best->cost, 0);
  }
  for (const Record& r : load_records(path.string())) EXPECT_EQ(r.target, "opencl");

  ApplyStats stats;
  std::ostringstream warn;
  o.schedule_hook = records_hook(path.string(), warn, &stats, "opencl");
  auto xv = test::random_floats(8 * 12 * 12, 7);
  std::vector<float> got = test::run_graph(g, {xv}, "opencl", o);
  EXPECT_EQ(stats.applied.size(), 2u) << warn.str();
  EXPECT_TRUE(warn.str().empty()) << warn.str();
  std::vector<float> want = test::run_graph(g, {xv}, "interp");
  EXPECT_LT(test::rel_error(got, want), 1e-5);
  // Records of one GPU target do not apply to another.
  ApplyStats cuda_stats;
  std::ostringstream cuda_warn;
  graph::ScheduleHook cuda_hook = records_hook(path.string(), cuda_warn, &cuda_stats, "cuda");
  graph::CompileOptions oc = o;
  oc.schedule_hook = cuda_hook;
  graph::compile(g, oc);
  EXPECT_TRUE(cuda_stats.applied.empty());
  EXPECT_EQ(cuda_stats.missing.size(), 2u);
  fs::remove(path);
}

}  // namespace
}  // namespace kiln
