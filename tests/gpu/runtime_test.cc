// The GPU backend's kernels run by hand-built DeviceFuncs on every runtime there is:
// OpenCL (pocl on a machine without a GPU) and, where built and a driver is present,
// CUDA. One suite, values computed here in C++.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backend-gpu/codegen_c.h"
#include "backend-gpu/device_module.h"
#include "backend-gpu/opencl_runtime.h"
#include "compiler/support/error.h"
#include "tests/gpu/gpu_test_util.h"
#ifdef KILN_GPU_HAVE_CUDA
#include "backend-gpu/cuda_runtime.h"
#endif

namespace kiln::gpu {
namespace {

using testing::FuncBuilder;

class GpuRuntime : public ::testing::TestWithParam<std::string> {
 public:
  // f's kernels built as one program on the parameter's runtime.
  std::unique_ptr<DeviceModule> build(const passes::DeviceFunc& f) {
    std::vector<passes::DeviceFunc> funcs = {f};
    std::unique_ptr<DeviceProgram> program;
    if (GetParam() == "opencl") {
      program = opencl_program(device_source(funcs, Dialect::OpenCL), kernel_names(funcs));
    } else {
#ifdef KILN_GPU_HAVE_CUDA
      program = cuda_program(nvrtc_ptx(device_source(funcs, Dialect::Cuda)), kernel_names(funcs));
#endif
    }
    return std::make_unique<DeviceModule>(funcs, std::move(program));
  }
};

TEST_P(GpuRuntime, VectorAddWithGuard) {
  const int n = 1000;  // not a multiple of the 64 threads: the last block is guarded
  auto m = build(testing::vector_add(n));
  std::vector<float> a(n), b(n), c(n, -1);
  for (int i = 0; i < n; ++i) a[i] = 0.5f * i, b[i] = 1000.0f - i;
  void* args[] = {a.data(), b.data(), c.data()};
  m->call(0, args);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "i=" << i;
  // A second call reuses the device buffers with new inputs.
  for (int i = 0; i < n; ++i) a[i] = -1.0f * i;
  m->call(0, args);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "i=" << i;
  std::vector<target::KernelStats> stats = m->stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].name, "vector_add_kernel0");
  EXPECT_GE(stats[0].values.at("ms"), 0.0);
}

TEST_P(GpuRuntime, SharedMemoryAndBarrierReverseEachBlock) {
  const int blocks = 4;
  auto m = build(testing::shared_reverse(blocks));
  std::vector<int32_t> in(blocks * 64), out(blocks * 64);
  for (int i = 0; i < blocks * 64; ++i) in[i] = i * 7 - 100;
  void* args[] = {in.data(), out.data()};
  m->call(0, args);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < 64; ++t) ASSERT_EQ(out[b * 64 + t], in[b * 64 + 63 - t]) << "block " << b << " thread " << t;
}

template <typename T>
void check_floor_divmod(GpuRuntime& fx, ir::DataType t) {
  std::vector<T> a, b;
  const T lo = std::numeric_limits<T>::min();
  for (int64_t x : {-7, 7, -6, 6, 0, -1, 1, 13, -13, 100}) {
    for (int64_t y : {3, -3, 1, -1, 7, -7}) {
      a.push_back(static_cast<T>(x));
      b.push_back(static_cast<T>(y));
    }
  }
  a.push_back(lo), b.push_back(-1);  // wraps, as in the IR
  a.push_back(lo), b.push_back(3);
  a.push_back(5), b.push_back(0);    // defined as 0 on the GPU
  int n = static_cast<int>(a.size());
  auto m = fx.build(testing::floor_divmod(t, n));
  std::vector<T> q(n), r(n);
  void* args[] = {a.data(), b.data(), q.data(), r.data()};
  m->call(0, args);
  for (int i = 0; i < n; ++i) {
    int64_t x = a[i], y = b[i];
    int64_t eq = 0, er = 0;
    if (y == -1) {
      eq = static_cast<int64_t>(0 - static_cast<uint64_t>(x));  // INT64_MIN / -1 wraps (and traps in C++)
    } else if (y != 0) {
      eq = x / y - ((x % y != 0 && ((x % y) ^ y) < 0) ? 1 : 0);
      er = x - eq * y;
    }
    EXPECT_EQ(q[i], static_cast<T>(eq)) << t.to_string() << ": " << x << " / " << y;
    EXPECT_EQ(r[i], static_cast<T>(er)) << t.to_string() << ": " << x << " % " << y;
  }
}

TEST_P(GpuRuntime, FloorDivisionAndModuloOnNegativeIntegers) {
  check_floor_divmod<int32_t>(*this, ir::DataType::Int(32));
  check_floor_divmod<int64_t>(*this, ir::DataType::Int(64));
  check_floor_divmod<int8_t>(*this, ir::DataType::Int(8));
  check_floor_divmod<int16_t>(*this, ir::DataType::Int(16));
}

TEST_P(GpuRuntime, CastsTruncateSaturateAndWrap) {
  std::vector<float> x = {1.9f, -1.9f, 300.7f, -1.5f, 0.0f, std::nanf(""), 3e9f, -3e9f, 1e20f, -1e20f, 255.0f, 0.25f};
  std::vector<int32_t> mi = {1, -1, 300, -129, 0, 127, 128, 16777217, -16777217, 2147483647, -2147483647 - 1, 65};
  int n = static_cast<int>(x.size());
  auto m = build(testing::casts(n));
  std::vector<int32_t> o_i32(n);
  std::vector<uint8_t> o_u8(n), o_b(n);
  std::vector<int8_t> o_i8(n);
  std::vector<double> o_f64(n);
  std::vector<int64_t> o_i64(n);
  std::vector<float> o_f32(n);
  void* args[] = {x.data(), mi.data(), o_i32.data(), o_u8.data(), o_i8.data(), o_f64.data(), o_b.data(), o_i64.data(), o_f32.data()};
  m->call(0, args);
  // As backend-cpu: truncate, NaN -> 0, saturate to int64, then wrap.
  auto to_i64 = [](float v) -> int64_t {
    if (std::isnan(v)) return 0;
    if (v >= 9.2233720368547758e18f) return std::numeric_limits<int64_t>::max();
    if (v <= -9.2233720368547758e18f) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  };
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(o_i32[i], static_cast<int32_t>(static_cast<uint32_t>(to_i64(x[i])))) << "x=" << x[i];
    EXPECT_EQ(o_u8[i], static_cast<uint8_t>(to_i64(x[i]))) << "x=" << x[i];
    EXPECT_EQ(o_i64[i], to_i64(x[i])) << "x=" << x[i];
    EXPECT_EQ(o_i8[i], static_cast<int8_t>(static_cast<uint8_t>(mi[i]))) << "m=" << mi[i];
    if (std::isnan(x[i])) EXPECT_TRUE(std::isnan(o_f64[i]));
    else EXPECT_EQ(o_f64[i], static_cast<double>(x[i]));
    EXPECT_EQ(o_b[i], x[i] != 0.0f ? 1 : 0) << "x=" << x[i];  // NaN is true
    EXPECT_EQ(o_f32[i], static_cast<float>(static_cast<double>(mi[i]))) << "m=" << mi[i];
  }
}

TEST_P(GpuRuntime, FloatIntrinsicsAndSelect) {
  std::vector<float> x = {0.5f, -0.5f, 2.5f, -2.5f, 3.5f, 1.25f, -3.75f, 0.0f, 7.0f, -7.0f};
  std::vector<float> y = {2.0f, 3.0f, -1.5f, 0.5f, 2.0f, 1.0f, 2.0f, 1.0f, -3.0f, 3.0f};
  int n = static_cast<int>(x.size());
  auto m = build(testing::intrinsics(n));
  std::vector<float> o(13 * n);
  void* args[] = {x.data(), y.data(), o.data()};
  m->call(0, args);
  for (int i = 0; i < n; ++i) {
    double a = x[i], b = y[i];
    double want[] = {std::exp(a),  std::log(std::fabs(a) + 1), std::sqrt(std::fabs(a)), std::tanh(a),
                     1 / (1 + std::exp(-a)), std::floor(a), std::ceil(a), std::nearbyint(a),
                     std::pow(std::fabs(a), b), std::erf(a), a - std::floor(a / b) * b, a < b ? a : b,
                     b > a ? b : a};
    for (int j = 0; j < 13; ++j) {
      double got = o[j * n + i];
      EXPECT_NEAR(got, want[j], 1e-5 * std::max(1.0, std::fabs(want[j]))) << "output " << j << " x=" << a << " y=" << b;
    }
    EXPECT_EQ(o[7 * n + i], std::nearbyint(x[i])) << "round is to nearest even: x=" << x[i];
  }
}

TEST_P(GpuRuntime, IntegerIntrinsicsShiftsAndLogic) {
  std::vector<int32_t> x = {5, -5, -2147483647 - 1, 123456, -1, 0, 7, 1, -100, 2147483647, 3, 64};
  std::vector<int32_t> y = {1, 2, 3, 31, 40, 64, 70, -1, 5, 0, 3, 6};
  int n = static_cast<int>(x.size());
  auto m = build(testing::int_ops(n));
  std::vector<int32_t> o(12 * n);
  void* args[] = {x.data(), y.data(), o.data()};
  m->call(0, args);
  auto w = [](int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); };
  for (int i = 0; i < n; ++i) {
    int64_t a = x[i];
    uint64_t s = static_cast<uint64_t>(static_cast<int64_t>(y[i]));  // the amount's 64-bit pattern
    int32_t want[] = {
        w(a < 0 ? -a : a),
        w(s > 63 ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << s)),
        w(a >> std::min<uint64_t>(s, 63)),
        w(static_cast<int64_t>(static_cast<uint64_t>(a) << 3)),
        w(a >> 2),
        x[i] & y[i],
        x[i] | y[i],
        x[i] ^ y[i],
        std::min(x[i], y[i]),
        std::max(x[i], y[i]),
        x[i] > y[i] ? w(a - y[i]) : w(int64_t{y[i]} * 3),
        ((x[i] > 0 && !(y[i] > 5)) || x[i] == y[i]) ? 1 : 0,
    };
    for (int j = 0; j < 12; ++j) EXPECT_EQ(o[j * n + i], want[j]) << "output " << j << " x=" << x[i] << " y=" << y[i];
  }
}

TEST_P(GpuRuntime, TemporaryBetweenTwoKernels) {
  const int n = 130;
  auto m = build(testing::two_kernels(n));
  std::vector<float> a(n), out(n);
  for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i) - 3;
  void* args[] = {a.data(), out.data()};
  m->call(0, args);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] * 2 + 1) << "i=" << i;
  EXPECT_EQ(m->stats().size(), 2u);
}

TEST_P(GpuRuntime, LocalArrayLoopAndLet) {
  const int n = 32;
  auto m = build(testing::local_sum(n));
  std::vector<int32_t> in(4 * n), out(n);
  for (int i = 0; i < 4 * n; ++i) in[i] = i % 11 - 5;
  void* args[] = {in.data(), out.data()};
  m->call(0, args);
  for (int t = 0; t < n; ++t) {
    int32_t want = 0;
    for (int j = 0; j < 4; ++j) want += in[t * 4 + j] * (j + 1);
    ASSERT_EQ(out[t], want) << "thread " << t;
  }
}

// OpenCL everywhere (pocl here); CUDA where the machine has a driver and a GPU (the
// same binary, run by bench/gpu on a lent GPU): a machine without one has no CUDA
// cases rather than skipped ones.
std::vector<std::string> runtimes() {
  std::vector<std::string> r = {"opencl"};
#ifdef KILN_GPU_HAVE_CUDA
  if (cuda_driver_available(nullptr)) r.push_back("cuda");
#endif
  return r;
}

INSTANTIATE_TEST_SUITE_P(Runtimes, GpuRuntime, ::testing::ValuesIn(runtimes()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// ---------------------------------------------------------------- OpenCL specifics

TEST(OpenclRuntime, FindsADeviceAndItsLimits) {
  OpenclDeviceInfo d = opencl_device();
  EXPECT_FALSE(d.name.empty());
  passes::GpuLimits l = opencl_limits();
  EXPECT_GE(l.max_threads_per_block, 64);
  EXPECT_GT(l.max_shared_bytes, 0);
}

TEST(OpenclRuntime, BuildFailureCarriesTheLog) {
  try {
    opencl_program("__kernel void broken(__global int* p) { p[0] = undeclared_thing; }", {"broken"});
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared_thing"), std::string::npos) << e.what();
  }
}

TEST(OpenclRuntime, UnknownKernelNamesTheCall) {
  try {
    opencl_program("__kernel void k(__global int* p) { p[0] = 1; }", {"nope"});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("clCreateKernel(nope)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::gpu
