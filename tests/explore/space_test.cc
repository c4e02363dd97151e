// The co-design space, the workload's text form and layers of a model, and tier 1's cycle
// model over configurations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend-vta/env.h"
#include "backend-vta/ops.h"
#include "backend-vta/program.h"
#include "boards/flow/synth.h"
#include "explore/space.h"
#include "explore/tiers.h"
#include "explore/workload.h"
#include "hw/spec/error.h"
#include "tuner/vta_templates.h"

namespace kiln::explore {
namespace {

namespace fs = std::filesystem;

boards::Board board(const std::string& name) { return boards::load_board(name, boards::boards_dir()); }

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const hw::Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExploreSpace, EveryIndexDecodesAndEncodesBack) {
  boards::Board b = board("pynq-z1");
  HwSpace s = HwSpace::for_board(b, boards::load_config(b.config));
  ASSERT_EQ(s.params().size(), 5u);
  EXPECT_EQ(s.size(), 3 * 4 * 5 * 5 * 3);
  EXPECT_EQ(s.knobs().size(), s.size());
  int valid = 0;
  for (int64_t i = 0; i < s.size(); ++i) {
    HwSpace::Point p = s.at(i);
    if (!p.config) {
      EXPECT_FALSE(p.invalid.empty()) << i;
      continue;
    }
    ++valid;
    ASSERT_EQ(s.index_of(*p.config), i) << p.config->name();
    // The keys outside the space are the base configuration's.
    EXPECT_EQ(p.config->params().log_inp_width, 3);
    EXPECT_EQ(p.config->params().log_batch, 0);
  }
  EXPECT_GT(valid, s.size() / 2);
  // The board's own configuration is a point of its space, and its name says what it is.
  std::optional<int64_t> ref = s.index_of(s.base());
  ASSERT_TRUE(ref);
  EXPECT_EQ(s.at(*ref).config->fingerprint(), hw::Config::vta_default().fingerprint());
  EXPECT_EQ(HwSpace::short_name(hw::Config::vta_default()), "1x16x16-i32k-w256k-a128k-u32k");
  EXPECT_FALSE(s.index_of(boards::load_config("tiny")));  // LOG_BLOCK 2 is outside a Zynq's range
  EXPECT_NE(error_of([&] { s.at(s.size()); }).find("outside the space"), std::string::npos);
}

TEST(ExploreSpace, FamiliesAndBoardRanges) {
  boards::Board ice = board("icebreaker");
  HwSpace s = HwSpace::for_board(ice, boards::load_config(ice.config));
  EXPECT_EQ(s.core(), "inorder");
  EXPECT_EQ(s.params()[0].key, "LOG_BLOCK");
  EXPECT_EQ(s.params()[0].values, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(s.index_of(boards::load_config("tiny")));

  boards::Board b = board("pynq-z1");
  b.json["explore"] = {{"LOG_BLOCK", {4, 4}}, {"LOG_WGT_BUFF_SIZE", {17, 18}}};
  HwSpace two = HwSpace::for_board(b, hw::Config::vta_default());
  EXPECT_EQ(two.size(), 2);
  b.json["explore"] = {{"LOG_BLOK", {4, 4}}};
  EXPECT_NE(error_of([&] { HwSpace::for_board(b, hw::Config::vta_default()); }).find("'LOG_BLOK' is not a configuration key"),
            std::string::npos);
  b.json["explore"] = {{"LOG_BLOCK", {4, 9}}};
  EXPECT_NE(error_of([&] { HwSpace::for_board(b, hw::Config::vta_default()); }).find("LOG_BLOCK range [4, 9] is not within"),
            std::string::npos);
  b.json["explore"] = {{"LOG_BLOCK", "4"}};
  EXPECT_NE(error_of([&] { HwSpace::for_board(b, hw::Config::vta_default()); }).find("explore.LOG_BLOCK: expected [min, max]"),
            std::string::npos);
}

TEST(ExploreWorkload, TextRoundTripsAndBadTextIsNamed) {
  ExploreWorkload w = resnet18_table();
  ASSERT_EQ(w.layers.size(), 11u);
  w.layers[0].count = 4;
  ExploreWorkload back = ExploreWorkload::from_text("resnet18", w.text());
  ASSERT_EQ(back.layers.size(), 11u);
  EXPECT_EQ(back.text(), w.text());
  EXPECT_EQ(back.layers[0].count, 4);
  EXPECT_EQ(back.macs(), w.macs());
  EXPECT_EQ(back.layers[3].conv.stride_h, 2);
  EXPECT_NE(error_of([] { ExploreWorkload::from_text("x", "conv2d:N=1,C=64*0"); }).find("positive integer"), std::string::npos);
  EXPECT_NE(error_of([] { ExploreWorkload::from_text("x", "matmul:M=1,N=2,K=3"); }).find("layer 'matmul:M=1,N=2,K=3'"),
            std::string::npos);
  EXPECT_NE(error_of([] { workload_of_ops({}); }).find("at least one layer"), std::string::npos);
}

TEST(ExploreWorkload, AModelsConvolutionsCountedByShape) {
  const fs::path model = fs::path(KILN_BINARY_DIR) / "tests/e2e/models/resnet18.onnx";
  ASSERT_TRUE(fs::exists(model)) << model;
  ExploreWorkload w = workload_of_model(model.string(), 32);
  EXPECT_EQ(w.name, "resnet18");
  // ResNet-18 without its 3-channel stem: 19 convolutions in 10 shapes; the first stage's
  // 64x64 3x3 runs four times.
  int total = 0;
  for (const Layer& l : w.layers) total += l.count;
  EXPECT_EQ(total, 19);
  EXPECT_EQ(w.layers.size(), 10u);
  EXPECT_EQ(w.layers[0].conv.in_channels, 64);
  EXPECT_EQ(w.layers[0].count, 4);
  EXPECT_NE(error_of([&] { workload_of_model(model.string(), 4096); }).find("no convolution"), std::string::npos);
}

TEST(ExploreTier1, CycleModelPicksEachLayersBestScheduleAndRefusesWhatCannotRun) {
  ExploreWorkload w = resnet18_table();
  const hw::Config cfg = hw::Config::vta_default();
  CycleEstimate e = model_cycles(cfg, w);
  ASSERT_TRUE(e.ok()) << e.invalid;
  ASSERT_EQ(e.layers.size(), 11u);
  vta::Env env(cfg);
  double sum = 0;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const vta::Requant rq = tuner::tuning_requant();
    EXPECT_EQ(e.layers[i].knobs, vta::default_conv2d_knobs(env, w.layers[i].conv, rq));
    sum += vta::estimate_conv2d(env, w.layers[i].conv, rq, e.layers[i].knobs).cycles;
    // At least the ideal GEMM time.
    EXPECT_GE(e.layers[i].model_cycles, static_cast<double>(w.layers[i].conv.macs()) / 256);
  }
  EXPECT_DOUBLE_EQ(e.cycles, sum);
  // A 32-wide GEMM core halves-and-more the ideal time; the cycle model says so.
  hw::ConfigParams p = cfg.params();
  p.log_block = 5;
  p.log_wgt_buff_size = 19;
  p.log_inp_buff_size = 16;
  p.log_acc_buff_size = 18;
  CycleEstimate big = model_cycles(hw::Config::from_params(p), w);
  ASSERT_TRUE(big.ok()) << big.invalid;
  EXPECT_LT(big.cycles, e.cycles / 2);
  // 48 channels are not a multiple of 32: the layer names itself.
  ExploreWorkload odd = workload_of_ops({"conv2d:N=1,C=48,H=8,W=8,O=64,KH=3,KW=3,stride=1,pad=1"});
  CycleEstimate no = model_cycles(hw::Config::from_params(p), odd);
  EXPECT_FALSE(no.ok());
  EXPECT_NE(no.invalid.find("layer L1"), std::string::npos) << no.invalid;
}

// The iCEBreaker's in-order core with its on-chip device memory: single-thread tilings
// that compile, costed by the in-order model at the memory's latency (0); the Zynq
// boards keep the decoupled core and the rtl device's DRAM model.
TEST(ExploreTier1, TheInorderCoreIsCostedByItsOwnModel) {
  boards::Board ice = board("icebreaker");
  HwSpace s = HwSpace::for_board(ice, boards::load_config(ice.config));
  EXPECT_EQ(s.timing().core, "inorder");
  EXPECT_EQ(s.timing().mem_latency, 0);
  boards::Board pynq = board("pynq-z1");
  EXPECT_EQ(HwSpace::for_board(pynq, boards::load_config(pynq.config)).timing().core, "decoupled");
  EXPECT_EQ(HwSpace::for_board(pynq, boards::load_config(pynq.config)).timing().mem_latency, -1);

  ExploreWorkload w = workload_of_ops({"conv2d:N=1,C=16,H=8,W=8,O=16,KH=3,KW=3,stride=1,pad=1",
                                       "conv2d:N=1,C=16,H=4,W=4,O=32,KH=3,KW=3,stride=1,pad=1"});
  const hw::Config cfg = boards::load_config(ice.config);
  CycleEstimate e = model_cycles(cfg, w, s.timing());
  ASSERT_TRUE(e.ok()) << e.invalid;
  vta::Env env(cfg);
  const vta::Requant rq = tuner::tuning_requant();
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const vta::Conv2DKnobs& k = e.layers[i].knobs;
    EXPECT_EQ(k.h_threads * k.oc_threads, 1);
    EXPECT_FALSE(k.double_buffer);
    EXPECT_DOUBLE_EQ(e.layers[i].model_cycles,
                     vta::estimate_inorder(vta::build_conv2d(env, w.layers[i].conv, rq, k), 0).cycles);
    // A micro-op a lane a cycle plus its overhead: far above the decoupled core's time.
    EXPECT_GT(e.layers[i].model_cycles, 2.0 * model_cycles(cfg, w).layers[i].model_cycles);
  }
  // A slower memory costs more cycles.
  EXPECT_GT(model_cycles(cfg, w, {"inorder", 32}).cycles, e.cycles);
}

}  // namespace
}  // namespace kiln::explore
