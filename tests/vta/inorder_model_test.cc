// The in-order core's cycle model (vta::estimate_inorder) against the in-order RTL:
// convolutions of several shapes and tilings on tiny.json (1x4x4), run on the rtl
// device's in-order core with the board top's memory timing (latency 0) and with the
// default AXI DRAM latency, bit-exact against the CPU reference, cycles counted. Seen
// within 1.1% (2026-12-04).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "backend-vta/ops.h"
#include "backend-vta/program.h"
#include "backend-vta/reference.h"
#include "backend-vta/strategy.h"
#include "hw/driver/device.h"
#include "hw/spec/config.h"
#include "hw/spec/regs.h"

namespace kiln {
namespace {

#ifdef KILN_HAVE_RTL
struct Case {
  vta::Conv2DWorkload wl;
  bool single_thread;  // the tiling without latency hiding (no virtual threads)
};

TEST(InorderModel, WithinThreePercentOfTheRtl) {
  hw::Config cfg = hw::Config::from_file(std::filesystem::path(KILN_SOURCE_DIR) / "hw/config/tiny.json");
  vta::Env env(cfg);
  const vta::Requant rq = {true, 6, true};
  std::vector<Case> cases = {
      {{"c16", 1, 8, 8, 16, 16, 3, 3, 1, 1, 1, 1}, false},
      {{"c16_32", 1, 4, 4, 16, 32, 3, 3, 1, 1, 1, 1}, true},
      {{"s2", 1, 12, 12, 8, 16, 3, 3, 1, 1, 2, 2}, false},
      {{"p1x1", 1, 6, 6, 32, 8, 1, 1, 0, 0, 1, 1}, true},
  };
  for (int latency : {0, 32}) {
    for (const Case& c : cases) {
      vta::Conv2DKnobs k = vta::default_conv2d_knobs(env, c.wl, rq, !c.single_thread);
      vta::Program p = vta::build_conv2d(env, c.wl, rq, k);
      driver::DeviceOptions opts;
      opts.core = "inorder";
      opts.dram_latency = latency;
      auto dev = driver::make_device("rtl", cfg, opts);
      vta::Conv2DTensors in = vta::random_conv2d_tensors(c.wl, 7);
      vta::Conv2DResult r = vta::run_conv2d(*dev, p, vta::pack_data(env, c.wl, in.data),
                                            vta::pack_kernel(env, c.wl, in.kernel), vta::pack_bias(env, c.wl, in.bias));
      ASSERT_EQ(vta::unpack_out(env, c.wl, r.out), vta::reference_conv2d(c.wl, rq, in.data, in.kernel, in.bias))
          << c.wl.to_string();
      const double measured = static_cast<double>(r.counters.at(hw::regs::Counter::kCycles));
      const vta::InorderEstimate e = vta::estimate_inorder(p, latency);
      EXPECT_LT(std::abs(e.cycles / measured - 1), 0.03)
          << c.wl.to_string() << " (" << k.to_string() << ") at latency " << latency << ": measured " << measured
          << " cycles, modelled " << e.cycles;
    }
  }
}
#endif

}  // namespace
}  // namespace kiln
