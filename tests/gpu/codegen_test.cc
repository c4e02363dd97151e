// The GPU backend's C printer: what the source of hand-built kernels says in each
// dialect, and the errors for what it does not support.
#include <gtest/gtest.h>

#include "backend-gpu/codegen_c.h"
#include "compiler/support/error.h"
#include "tests/gpu/gpu_test_util.h"

namespace kiln::gpu {
namespace {

using testing::FuncBuilder;

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(GpuCodegen, OpenclKernelSignatureAxesSharedAndBarrier) {
  std::string src = opencl_source(testing::shared_reverse(2));
  EXPECT_TRUE(has(src, "__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void shared_reverse_kernel0("
                       "__global int* restrict in, __global int* restrict out)"))
      << src;
  EXPECT_TRUE(has(src, "const int bx = (int)get_group_id(0);")) << src;
  EXPECT_TRUE(has(src, "const int tx = (int)get_local_id(0);")) << src;
  EXPECT_TRUE(has(src, "__local int s_shared[64];")) << src;
  EXPECT_TRUE(has(src, "barrier(CLK_LOCAL_MEM_FENCE);")) << src;
}

TEST(GpuCodegen, CudaKernelSignatureAxesSharedAndBarrier) {
  std::string src = cuda_source(testing::shared_reverse(2));
  EXPECT_TRUE(has(src, "extern \"C\" __global__ void __launch_bounds__(64) shared_reverse_kernel0("
                       "int* __restrict__ in, int* __restrict__ out)"))
      << src;
  EXPECT_TRUE(has(src, "const int bx = (int)blockIdx.x;")) << src;
  EXPECT_TRUE(has(src, "__shared__ int s_shared[64];")) << src;
  EXPECT_TRUE(has(src, "__syncthreads();")) << src;
}

TEST(GpuCodegen, FloorDivisionGoesThroughHelpers) {
  std::string src = opencl_source(testing::floor_divmod(ir::DataType::Int(32), 4));
  EXPECT_TRUE(has(src, "kiln_floordiv_i32(")) << src;
  EXPECT_TRUE(has(src, "kiln_floormod_i32(")) << src;
  // Unsigned types divide as C does.
  std::string u = cuda_source(testing::floor_divmod(ir::DataType::UInt(32), 4));
  EXPECT_FALSE(has(u, "kiln_floordiv")) << u;
}

TEST(GpuCodegen, NamesAreSanitizedAndUniquePerKernel) {
  FuncBuilder fb("names");
  ir::Var a = fb.arg("x.data", ir::DataType::Float(32), 8, true);
  ir::Var b = fb.arg("x.data", ir::DataType::Float(32), 8);
  ir::Var kw = fb.arg("int", ir::DataType::Float(32), 8);
  passes::DeviceKernel& k = fb.kernel({a, b, kw});
  ir::Var tx = testing::axis(k, "threadIdx.x", 8);
  k.body = ir::make_store(a, ir::make_load(ir::DataType::Float(32), b, tx) + ir::make_load(ir::DataType::Float(32), kw, tx), tx);
  std::string src = opencl_source(fb.func());
  EXPECT_TRUE(has(src, "__global float* restrict x_data, __global float* restrict x_data_1, __global float* restrict v_int"))
      << src;
  EXPECT_TRUE(has(src, "x_data[tx] = (x_data_1[tx] + v_int[tx]);")) << src;
}

TEST(GpuCodegen, RefusesFloat16AndVectors) {
  FuncBuilder fb("half");
  ir::Var a = fb.arg("a", ir::DataType::Float(16), 8, true);
  passes::DeviceKernel& k = fb.kernel({a});
  ir::Var tx = testing::axis(k, "threadIdx.x", 8);
  k.body = ir::make_store(a, ir::make_const(ir::DataType::Float(16), 1.0), tx);
  try {
    opencl_source(fb.func());
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_TRUE(has(e.what(), "the GPU backend does not support float16")) << e.what();
    EXPECT_TRUE(has(e.what(), "half_kernel0")) << e.what();
  }
  FuncBuilder fv("vec");
  ir::Var v = fv.arg("v", ir::DataType::Float(32), 8, true);
  passes::DeviceKernel& kv = fv.kernel({v});
  kv.body = ir::make_store(v, ir::make_broadcast(ir::make_float(1.0), 4), ir::make_ramp(0, 1, 4));
  EXPECT_THROW(cuda_source(fv.func()), CompileError);
}

TEST(GpuCodegen, UnknownIntrinsicIsNamed) {
  FuncBuilder fb("unknown");
  ir::Var a = fb.arg("a", ir::DataType::Float(32), 8, true);
  passes::DeviceKernel& k = fb.kernel({a});
  ir::Var tx = testing::axis(k, "threadIdx.x", 8);
  k.body = ir::make_store(a, ir::make_call(ir::DataType::Float(32), "frobnicate", {ir::make_float(1.0)}), tx);
  try {
    cuda_source(fb.func());
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_TRUE(has(e.what(), "'frobnicate'")) << e.what();
  }
}

TEST(GpuCodegen, OneProgramForManyFunctions) {
  std::string src = device_source({testing::vector_add(100), testing::two_kernels(100)}, Dialect::OpenCL);
  EXPECT_TRUE(has(src, "void vector_add_kernel0(")) << src;
  EXPECT_TRUE(has(src, "void two_kernels_kernel0(")) << src;
  EXPECT_TRUE(has(src, "void two_kernels_kernel1(")) << src;
}

TEST(GpuCodegen, StorageTypes) {
  EXPECT_EQ(storage_type_name(ir::DataType::Bool(), Dialect::OpenCL), "uchar");
  EXPECT_EQ(storage_type_name(ir::DataType::Int(64), Dialect::Cuda), "long long");
  EXPECT_EQ(storage_type_name(ir::DataType::UInt(16), Dialect::OpenCL), "ushort");
}

}  // namespace
}  // namespace kiln::gpu
