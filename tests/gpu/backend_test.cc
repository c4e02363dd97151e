// The "opencl" and "cuda" backends of the registry: lowered functions with loops bound
// to GPU axes, split into kernels, built as one program and called as the graph
// executor calls them.
#include <gtest/gtest.h>

#include "backend-gpu/device_program.h"
#ifdef KILN_GPU_HAVE_CUDA
#include "backend-gpu/cuda_runtime.h"
#endif
#include "backend-gpu/graph_backend.h"
#include "compiler/schedule/lower.h"
#include "compiler/schedule/schedule.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "compiler/target/target.h"
#include "compiler/te/tensor.h"

namespace kiln::gpu {
namespace {

class GpuBackend : public ::testing::Test {
 protected:
  void SetUp() override { register_graph_backends(); }
};

// C = A + B over n elements, split by 64 over blockIdx.x / threadIdx.x.
schedule::LoweredFunc vector_add(int n) {
  te::Tensor a = te::placeholder({n}, ir::DataType::Float(32), "A");
  te::Tensor b = te::placeholder({n}, ir::DataType::Float(32), "B");
  te::Tensor c = te::compute({n}, [&](ir::Var i) { return a(i) + b(i); }, "C");
  auto s = schedule::create_schedule({c});
  auto [bo, ti] = s[c].split(c->axis[0], 64);
  s[c].bind(bo, "blockIdx.x");
  s[c].bind(ti, "threadIdx.x");
  return schedule::lower(s, {a, b, c}, "vadd");
}

TEST_F(GpuBackend, RegistersOpenclWithGpuTraits) {
  ASSERT_TRUE(target::has_backend("opencl"));
  auto be = target::make_backend("opencl");
  EXPECT_TRUE(be->is_host());
  EXPECT_EQ(be->traits("opencl").gpu_threads, 256);
  EXPECT_EQ(target::Target::parse("opencl -device=0").option("device"), "0");
  EXPECT_THROW(target::Target::parse("opencl -device=x"), CompileError);
  EXPECT_THROW(target::Target::parse("opencl -arch=sm_80"), CompileError);
}

TEST_F(GpuBackend, OpenclRunsALoweredFunction) {
  const int n = 1000;
  auto module = target::make_backend("opencl")->build({vector_add(n)}, "opencl");
  std::vector<float> a(n), b(n), c(n, 0);
  for (int i = 0; i < n; ++i) a[i] = 1.5f * i, b[i] = -2.0f * i + 7;
  void* args[] = {a.data(), b.data(), c.data()};
  module->call(0, args);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "i=" << i;
  EXPECT_FALSE(module->stats().empty());
}

#ifdef KILN_GPU_HAVE_CUDA
TEST_F(GpuBackend, CudaCompilesWithoutAGpuAndRunsWhereThereIsOne) {
  ASSERT_TRUE(target::has_backend("cuda"));
  EXPECT_EQ(target::Target::parse("cuda -arch=sm_90").option("arch"), "sm_90");
  const int n = 1000;
  auto module = target::make_backend("cuda")->build({vector_add(n)}, "cuda -arch=sm_80");
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 0);
  void* args[] = {a.data(), b.data(), c.data()};
  if (!cuda_driver_available(nullptr)) {
    // No GPU here: the call says so plainly (the model compiled all the same).
    try {
      module->call(0, args);
      FAIL() << "a CUDA call ran on a machine without a driver";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("libcuda.so.1"), std::string::npos) << e.what();
    }
    return;
  }
  module->call(0, args);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], 3.0f) << "i=" << i;
}
#endif

}  // namespace
}  // namespace kiln::gpu
