// CUDA without a GPU: the hand-built kernels compiled to PTX by NVRTC, then assembled
// by the toolkit's ptxas for sm_80 and sm_90; its -v report must show the shared
// memory each kernel declares, registers in use, and the barrier in the PTX.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "backend-gpu/cuda_runtime.h"
#include "compiler/graph/gpu_schedule.h"
#include "compiler/schedule/lower.h"
#include "compiler/te/ops.h"
#include "compiler/support/error.h"
#include "tests/gpu/gpu_test_util.h"

namespace kiln::gpu {
namespace {

struct PtxasReport {
  std::string text;
  int registers = -1;
  int64_t shared_bytes = 0;
};

// Runs ptxas -v on `ptx`; the report of the one kernel in it.
PtxasReport ptxas(const std::string& ptx, const std::string& arch) {
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  std::filesystem::path file = dir / ("kiln_ptx_test_" + std::to_string(::getpid()) + "_" + arch + ".ptx");
  std::ofstream(file) << ptx;
  std::string cmd = std::string(KILN_CUDA_BIN_DIR) + "/ptxas -arch=" + arch + " -v " + file.string() + " -o /dev/null 2>&1";
  PtxasReport r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (fgets(buf, sizeof(buf), p)) r.text += buf;
  int rc = pclose(p);
  std::filesystem::remove(file);
  EXPECT_EQ(rc, 0) << cmd << "\n" << r.text;
  std::smatch m;
  if (std::regex_search(r.text, m, std::regex("Used (\\d+) registers"))) r.registers = std::stoi(m[1]);
  if (std::regex_search(r.text, m, std::regex("(\\d+) bytes smem"))) r.shared_bytes = std::stoll(m[1]);
  return r;
}

class Ptx : public ::testing::TestWithParam<std::string> {};

TEST_P(Ptx, SharedKernelReportsItsSharedBytesAndBarrier) {
  passes::DeviceFunc f = testing::shared_reverse(4);
  std::string ptx = cuda_ptx(f, GetParam());
  EXPECT_TRUE(std::regex_search(ptx, std::regex("\\bbar(rier)?\\.sync\\b"))) << ptx;
  EXPECT_NE(ptx.find(".entry shared_reverse_kernel0"), std::string::npos) << ptx;
  PtxasReport r = ptxas(ptx, GetParam());
  EXPECT_EQ(r.shared_bytes, 64 * 4) << r.text;
  EXPECT_GT(r.registers, 0) << r.text;
}

TEST_P(Ptx, EveryHandBuiltKernelAssembles) {
  std::vector<passes::DeviceFunc> funcs = {
      testing::vector_add(1000),      testing::floor_divmod(ir::DataType::Int(64), 16),
      testing::casts(12),             testing::intrinsics(10),
      testing::int_ops(12),           testing::local_sum(32)};
  for (const passes::DeviceFunc& f : funcs) {
    std::string ptx = cuda_ptx(f, GetParam());
    PtxasReport r = ptxas(ptx, GetParam());
    EXPECT_GT(r.registers, 0) << f.name << ": " << r.text;
    EXPECT_EQ(r.shared_bytes, 0) << f.name << ": " << r.text;
    EXPECT_EQ(ptx.find("bar.sync"), std::string::npos) << f.name << " has no barrier";
  }
}

TEST_P(Ptx, LoweredTiledMatmulReportsTheSchedulesTilesAndBarriers) {
  // The GPU's shared-memory matrix product, 64 x 48 x 32 in blocks of 32 x 16 with 8 x 4
  // threads and k slices of 8: the schedule fixes A's 32 x 8 and B's 8 x 16 float
  // slices in shared memory and the two barriers of each step of k.
  te::Tensor a = te::placeholder({64, 32}, ir::DataType::Float(32), "A");
  te::Tensor b = te::placeholder({32, 48}, ir::DataType::Float(32), "B");
  te::Tensor c = te::matmul(a, b, "C");
  schedule::Schedule s = schedule::create_schedule({c});
  ASSERT_TRUE(graph::schedule_gpu_matmul(s, c, c, {32, 16, 8, 4, 8}));
  std::string ptx = cuda_ptx(passes::split_host_device(schedule::lower(s, {a, b, c}, "mm")), GetParam());
  const std::regex barrier("\\bbar(rier)?\\.sync\\b");
  std::ptrdiff_t barriers = std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), barrier), std::sregex_iterator());
  EXPECT_EQ(barriers, 2) << ptx;
  PtxasReport r = ptxas(ptx, GetParam());
  EXPECT_EQ(r.shared_bytes, (32 * 8 + 8 * 16) * 4) << r.text;
  EXPECT_GT(r.registers, 16) << "a thread's 4 x 4 tile lives in registers: " << r.text;
}

TEST(Ptx, NvrtcErrorCarriesTheLog) {
  try {
    nvrtc_ptx("extern \"C\" __global__ void k(int* p) { p[0] = undeclared_thing; }");
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared_thing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nvrtc_ptx("", "x86"), CompileError);
}

// Loading a module needs the driver: where there is none, the reason is the error;
// where there is one (a lent GPU), the module loads.
TEST(Ptx, LoadingSaysPlainlyWhenThereIsNoDriver) {
  std::string why;
  std::string ptx = cuda_ptx(testing::vector_add(64));
  if (cuda_driver_available(&why)) {
    EXPECT_NO_THROW(cuda_program(ptx, {"vector_add_kernel0"}));
    return;
  }
  EXPECT_FALSE(why.empty());
  try {
    cuda_program(ptx, {"vector_add_kernel0"});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), why);
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, Ptx, ::testing::Values("sm_80", "sm_90"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace kiln::gpu
