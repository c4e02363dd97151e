// Max pooling on the accelerator (max_pool2d_packed): the GEMM core gathers each window
// position through the identity block, the ALU takes the running maximum; bit for bit
// against the CPU reference on fsim and the RTL.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>

#include "backend-vta/ops.h"
#include "compiler/support/error.h"
#include "hw/driver/device.h"

namespace kiln {
namespace {

hw::Config config(const std::string& name) {
  return hw::Config::from_file(std::filesystem::path(KILN_SOURCE_DIR) / "hw/config" / (name + ".json"));
}

// Pools random packed data on `device` and compares with the reference.
vta::Program check_pool(const std::string& device, const std::string& cfg_name, const vta::PoolWorkload& wl,
                        int lo = -128) {
  hw::Config cfg = config(cfg_name);
  vta::Env env(cfg);
  vta::PoolKnobs k = vta::default_pool_knobs(env, wl);
  SCOPED_TRACE(wl.to_string() + " on " + device + "/" + cfg_name + " with " + k.to_string());
  vta::Program p = vta::build_max_pool2d(env, wl, k);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> d(lo, 127);
  std::vector<int8_t> data(static_cast<size_t>(int64_t{wl.batch} * wl.channels * wl.height * wl.width));
  for (auto& v : data) v = static_cast<int8_t>(d(rng));
  driver::DeviceOptions opts;
  opts.dram_bytes = uint64_t{64} << 20;
  auto dev = driver::make_device(device, cfg, opts);
  std::vector<int8_t> got = vta::run_max_pool2d(*dev, p, data);
  std::vector<int8_t> want = vta::reference_max_pool2d(env, wl, data);
  EXPECT_EQ(got, want);
  EXPECT_GT(std::set<int8_t>(want.begin(), want.end()).size(), 10u);
  return p;
}

vta::PoolWorkload pool(int channels, int size, int k, int stride, int pad, int batch = 1) {
  vta::PoolWorkload wl;
  wl.batch = batch;
  wl.channels = channels;
  wl.height = wl.width = size;
  wl.kernel_h = wl.kernel_w = k;
  wl.stride_h = wl.stride_w = stride;
  wl.pad_h = wl.pad_w = pad;
  return wl;
}

TEST(VtaMaxPool, MatchesTheReferenceOnFsim) {
  // ResNet-18's pool (3x3, stride 2, padding 1) on a smaller image; without padding;
  // a 2x2 pool; a window of one.
  vta::Program p = check_pool("fsim", "default", pool(32, 16, 3, 2, 1), 0);
  EXPECT_GT(p.stats().alu_insns, 0u);
  check_pool("fsim", "default", pool(16, 9, 3, 2, 0));
  check_pool("fsim", "default", pool(32, 8, 2, 2, 0));
  check_pool("fsim", "default", pool(16, 5, 1, 1, 0));
  check_pool("fsim", "tiny", pool(8, 12, 3, 2, 1), 0);
  check_pool("fsim", "small", pool(16, 7, 3, 1, 1), 0);
}

#ifdef KILN_HAVE_RTL
TEST(VtaMaxPool, RtlMatchesTheReference) { check_pool("rtl", "default", pool(16, 16, 3, 2, 1), 0); }
#endif

TEST(VtaMaxPool, ShapesItCannotRunNameTheProblem) {
  vta::Env env(config("default"));
  auto message = [&](const vta::PoolWorkload& wl) {
    try {
      vta::default_pool_knobs(env, wl);
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(pool(24, 8, 3, 2, 1)).find("not a multiple of the block"), std::string::npos);
  EXPECT_NE(message(pool(16, 8, 3, 2, 3)).find("smaller than the window"), std::string::npos);
  // 25x25 window positions of one output element do not fit ACC.
  EXPECT_NE(message(pool(16, 200, 100, 1, 0)).find("no tile fits"), std::string::npos);
}

}  // namespace
}  // namespace kiln
