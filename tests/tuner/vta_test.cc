// The VTA template: tuning a convolution of the VTA backend by cycles on the RTL.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend-vta/ops.h"
#include "backend-vta/reference.h"
#include "hw/driver/device.h"
#include "support/error.h"
#include "tuner/measure.h"
#include "tuner/records.h"
#include "tuner/tuner.h"
#include "tuner/vta_templates.h"

namespace kiln {
namespace {

hw::Config config(const std::string& name) {
  return hw::Config::from_file(std::filesystem::path(KILN_SOURCE_DIR) / "hw/config" / (name + ".json"));
}

TEST(TunerVta, SpaceCoversTheStrategysKnobs) {
  tuner::register_vta_templates(config("default"));
  const tuner::Template& t = tuner::find_template("conv2d.vta");
  EXPECT_EQ(t.target, "vta");
  tuner::Workload w = tuner::parse_workload("conv2d:N=1,C=64,H=14,W=14,O=32,KH=3,pad=1,stride=1");
  tuner::ConfigSpace s = t.space(w);
  // 14 rows and columns: 4 divisors each; 2 output and 4 input channel blocks.
  EXPECT_EQ(s.size(), 4 * 4 * 2 * 3 * 3 * 2);
  vta::Conv2DKnobs k = tuner::vta_knobs(s.get(s.size() - 1));
  EXPECT_EQ(k.tile_h, 14);
  EXPECT_EQ(k.tile_ic, 4);
  EXPECT_EQ(k.oc_threads, 2);
  EXPECT_TRUE(k.double_buffer);
  // A shape the strategy cannot take is refused by the space.
  EXPECT_THROW(t.space(tuner::parse_workload("conv2d:N=1,C=20,H=8,W=8,O=16,KH=1")), std::exception);
}

#ifdef KILN_HAVE_RTL
TEST(TunerVta, TunesByCyclesOnTheRtlAndTheBestRecordRebuilds) {
  hw::Config cfg = config("default");
  tuner::register_vta_templates(cfg);
  const tuner::Template& t = tuner::find_template("conv2d.vta");
  tuner::Workload w = tuner::parse_workload("conv2d:N=1,C=64,H=14,W=14,O=32,KH=3,pad=1,stride=1");
  auto records = std::filesystem::temp_directory_path() / ("kiln_vta_tune_" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(records);
  tuner::MeasureOptions mo;
  mo.timeout_s = 60;
  tuner::LocalPool pool(2, mo);
  tuner::TuneOptions o;
  o.tuner = "xgb";
  o.trials = 16;
  o.batch = 8;
  o.seed = 3;
  o.records = records.string();
  tuner::TuneResult r = tuner::tune(t, w, pool, o);
  EXPECT_EQ(r.measured, 16);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(r.best->unit, "cycles");
  EXPECT_GT(r.best->cost, 0);
  // Every record is in the file, with its unit or its error.
  std::vector<tuner::Record> all = tuner::load_records(records.string());
  EXPECT_EQ(all.size(), 16u);
  for (const tuner::Record& rec : all) EXPECT_TRUE(rec.ok() ? rec.unit == "cycles" : !rec.error.empty()) << rec.to_json();
  // The best configuration, rebuilt, runs correctly in exactly the recorded cycles.
  vta::Env env(cfg);
  vta::Conv2DWorkload wl = tuner::vta_workload(w);
  tuner::ConfigSpace space = t.space(w);
  vta::Conv2DKnobs k = tuner::vta_knobs(space.get(r.best->config));
  vta::Requant rq;
  rq.bias = false;
  vta::Program p = vta::build_conv2d(env, wl, rq, k);
  vta::Conv2DTensors in = vta::random_conv2d_tensors(wl, 1);
  driver::DeviceOptions opts;
  opts.dram_bytes = uint64_t{256} << 20;
  auto dev = driver::make_device("rtl", cfg, opts);
  vta::Conv2DResult res = vta::run_conv2d(*dev, p, vta::pack_data(env, wl, in.data), vta::pack_kernel(env, wl, in.kernel),
                                          vta::pack_bias(env, wl, in.bias));
  EXPECT_EQ(vta::unpack_out(env, wl, res.out), vta::reference_conv2d(wl, rq, in.data, in.kernel, in.bias));
  EXPECT_EQ(double(res.counters.at(hw::regs::Counter::kCycles)), r.best->cost);
  std::filesystem::remove(records);
}

// A candidate is measured on the device register_vta_templates is given: a slower DRAM
// costs cycles, the in-order core takes its own; fsim, which counts no cycles, is refused.
TEST(TunerVta, MeasuresOnTheDeviceItIsGiven) {
  hw::Config cfg = config("default");
  tuner::Workload w = tuner::parse_workload("conv2d:N=1,C=16,H=8,W=8,O=16,KH=3,pad=1,stride=1");
  auto measure = [&](const tuner::VtaDevice& device, int64_t index) {
    tuner::register_vta_templates(cfg, device);
    return tuner::measure_here({"conv2d.vta", w, index}, tuner::MeasureOptions{});
  };
  // The first candidate that fits the scratchpads.
  int64_t index = 0;
  tuner::MeasureResult first = measure({}, index);
  const int64_t candidates = tuner::find_template("conv2d.vta").space(w).size();
  while (!first.ok() && index + 1 < candidates) first = measure({}, ++index);
  ASSERT_TRUE(first.ok()) << first.error;
  const double base = first.cost;
  tuner::VtaDevice slow, inorder;
  slow.options.dram_latency = 400;
  inorder.options.core = "inorder";
  tuner::MeasureResult s = measure(slow, index), i = measure(inorder, index);
  ASSERT_TRUE(s.ok() && i.ok()) << s.error << i.error;
  EXPECT_GT(s.cost, base);
  EXPECT_NE(i.cost, base);
  try {
    tuner::make_vta_device(cfg, {"fsim"});
    ADD_FAILURE() << "fsim measured";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycles, which the fsim device does not count"), std::string::npos) << e.what();
  }
  tuner::register_vta_templates(cfg);
}
#endif

}  // namespace
}  // namespace kiln
