// The tier-1 resource model (explore/resource_model.h): the nonnegative fit, the
// derived DSP and BRAM counts, the shipped calibration of each family, its errors, and
// monotonicity. No test runs Yosys: tests/boards checks the flow itself.
#include "explore/resource_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "boards/flow/synth.h"
#include "hw/spec/error.h"

namespace kiln::explore {
namespace {

namespace fs = std::filesystem;

hw::Config make(int log_batch, int log_block, int uop, int inp, int wgt, int acc) {
  hw::ConfigParams p;
  p.log_batch = log_batch;
  p.log_block = log_block;
  p.log_uop_buff_size = uop;
  p.log_inp_buff_size = inp;
  p.log_wgt_buff_size = wgt;
  p.log_acc_buff_size = acc;
  return hw::Config::from_params(p);
}

fs::path calibration(const std::string& family) {
  return fs::path(KILN_SOURCE_DIR) / "explore" / "calibration" / (family + ".json");
}

TEST(FitNonnegative, RecoversExactCoefficients) {
  std::vector<std::vector<double>> a = {{1, 2, 0}, {1, 5, 1}, {1, 9, 3}, {1, 1, 7}, {1, 4, 4}};
  std::vector<double> b;
  for (const auto& r : a) b.push_back(3 * r[0] + 0.5 * r[1] + 2 * r[2]);
  std::vector<double> x = fit_nonnegative(a, b);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_NEAR(x[0], 3, 1e-6);
  EXPECT_NEAR(x[1], 0.5, 1e-6);
  EXPECT_NEAR(x[2], 2, 1e-6);
}

TEST(FitNonnegative, ClampsANegativeOptimumToZero) {
  // The unconstrained fit of b = 10 - x would give a negative slope.
  std::vector<std::vector<double>> a = {{1, 1}, {1, 2}, {1, 3}};
  std::vector<double> x = fit_nonnegative(a, {9, 8, 7});
  EXPECT_NEAR(x[1], 0, 1e-12);
  EXPECT_NEAR(x[0], 8, 1e-6);
}

TEST(BramUnits, TilesAsYosysDoes) {
  // Measured with Yosys 0.23 on xcup (kiln synth, ultra96): the default configuration's
  // 101.5 blocks are INP 2048x128 on 15 RAMB18, WGT 1024x2048 on 57 RAMB36, two ACC
  // banks 1024x512 on 29 RAMB18 each, UOP 8192x32 on 8 RAMB36.
  EXPECT_EQ(bram_units("xcup", 128, 2048), 7.5);
  EXPECT_EQ(bram_units("xcup", 2048, 1024), 57);
  EXPECT_EQ(bram_units("xcup", 512, 1024), 14.5);
  EXPECT_EQ(bram_units("xcup", 32, 8192), 8);
  EXPECT_EQ(bram_units("xcup", 128, 256), 2);   // tiny's WGT: two RAMB36, not four RAMB18
  EXPECT_EQ(bram_units("xcup", 32, 256), 0.5);
  EXPECT_EQ(bram_units("xc7", 2048, 64), 0);    // LUT RAM
  EXPECT_EQ(bram_units("ice40", 128, 256), 8);  // tiny.json: 8 EBR for a 128-bit row
  EXPECT_EQ(bram_units("ice40", 32, 256), 2);
  EXPECT_EQ(bram_units("ice40", 4, 1024), 1);
}

TEST(ResourceModel, DerivedDspCountsPairedProducts) {
  ResourceModel xcup("xcup", "kiln_top");
  // 1x16x16: 128 DSP48E2 of paired products and 3 for each of the 16 ALU multipliers.
  EXPECT_EQ(xcup.derived("DSP", hw::Config::vta_default()), 128 + 48);
  ResourceModel ice40("ice40", "kiln_top");
  EXPECT_EQ(ice40.derived("DSP", hw::Config::vta_default()), 256 + 48);
  ResourceModel inorder("ice40", "kiln_icebreaker");
  EXPECT_EQ(inorder.derived("DSP", make(0, 2, 10, 10, 12, 12)), 4 + 3);
}

// Points made from known coefficients: the fit gives them back, and predicts exactly.
TEST(ResourceModel, FitRecoversSyntheticCoefficients) {
  ResourceModel model("xcup", "kiln_top");
  const std::vector<hw::Config> cfgs = {make(0, 2, 10, 10, 12, 12), make(0, 3, 12, 12, 14, 14),
                                        make(0, 4, 12, 12, 14, 14), make(1, 3, 12, 13, 15, 15),
                                        make(0, 4, 15, 15, 18, 17), make(0, 2, 12, 12, 15, 14)};
  const double k_const = 20000, k_products = 60, k_lanes = 300, k_addr = 10;
  auto truth = [&](const std::string& kind, const hw::Config& c) {
    std::vector<double> f = model.features(kind, c);
    double v = model.derived(kind, c);
    if (kind == "LUT") v += k_const * f[0] + k_products * f[1] + k_lanes * f[2] + k_addr * f[3];
    if (kind == "FF") v += 3000 * f[0] + 4 * f[1] + 40 * f[2];
    if (kind == "DSP") v += 1;
    if (kind == "BRAM") v += 0.5;
    return v;
  };
  for (const hw::Config& c : cfgs) {
    std::map<std::string, double> used;
    for (const std::string& kind : boards::kResourceKinds) used[kind] = truth(kind, c);
    model.add_point(c, used);
  }
  EXPECT_EQ(model.points(), cfgs.size());
  nlohmann::json coef = model.coefficients();
  EXPECT_NEAR(coef["LUT"]["fitted"]["const"].get<double>(), k_const, 1e-3 * k_const);
  EXPECT_NEAR(coef["LUT"]["fitted"]["gemm_products"].get<double>(), k_products, 1e-3 * k_products);
  EXPECT_NEAR(coef["LUT"]["fitted"]["alu_lanes"].get<double>(), k_lanes, 1e-3 * k_lanes);
  EXPECT_NEAR(coef["LUT"]["fitted"]["address_bits"].get<double>(), k_addr, 1e-2 * k_addr);
  EXPECT_NEAR(coef["FF"]["fitted"]["address_bits"].get<double>(), 0, 1e-3);
  EXPECT_NEAR(coef["DSP"]["fitted"]["const"].get<double>(), 1, 1e-6);
  hw::Config unseen = make(0, 5, 12, 12, 16, 15);
  for (const auto& [kind, v] : model.predict(unseen))
    EXPECT_NEAR(v, truth(kind, unseen), 1e-3 * std::max(1.0, truth(kind, unseen))) << kind;
  nlohmann::json err = model.error_report();
  EXPECT_LT(err["resources"]["LUT"]["loo"]["max"].get<double>(), 1e-3);
}

TEST(ResourceModel, PredictWithoutPointsNamesTheModel) {
  ResourceModel model("xc7", "kiln_top");
  try {
    model.predict(hw::Config::vta_default());
    FAIL() << "no error";
  } catch (const hw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("xc7"), std::string::npos) << e.what();
  }
}

// The shipped calibration of each family loads, and every calibration point is
// predicted within the error the model reports for it.
class ShippedCalibration : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedCalibration, LoadsAndPredictsWithinItsReportedError) {
  const fs::path file = calibration(GetParam());
  ASSERT_TRUE(fs::is_regular_file(file)) << "explore/calibration ships one file per family; none for " << GetParam();
  ResourceModel model = ResourceModel::from_file(file);
  EXPECT_EQ(model.family(), GetParam());
  ASSERT_GE(model.points(), 2u);
  nlohmann::json err = model.error_report();
  // The numbers docs/explore.md quotes: the fit's coefficients and its errors.
  std::cout << GetParam() << " coefficients: " << model.coefficients().dump() << "\n"
            << GetParam() << " errors: " << err.dump() << "\n";
  for (const ResourcePoint& p : model.point_list()) {
    hw::Config cfg = hw::Config::from_json(p.config.dump());
    std::map<std::string, double> pred = model.predict(cfg);
    for (const auto& [kind, measured] : p.used) {
      const double max_rel = err["resources"][kind]["fit"]["max"].get<double>();
      EXPECT_LE(std::abs(pred[kind] - measured) / std::max(measured, 1.0), max_rel + 1e-9)
          << GetParam() << " " << kind << " " << p.config.dump();
    }
    // DSP and BRAM are derived exactly (plus a fitted constant): within a few units.
    EXPECT_NEAR(pred["DSP"], p.used.at("DSP"), 2) << p.config.dump();
    EXPECT_NEAR(pred["BRAM"], p.used.at("BRAM"), 2) << p.config.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ShippedCalibration, ::testing::Values("xcup", "xc7", "ice40"));

TEST(ResourceModel, ForBoardLoadsTheBoardsFamily) {
  fs::path boards = fs::path(KILN_SOURCE_DIR) / "boards";
  for (std::string name : {"ultra96", "pynq-z1", "icebreaker"}) {
    boards::Board board = boards::load_board(name, boards);
    if (!fs::is_regular_file(calibration(board.family))) continue;
    ResourceModel model = ResourceModel::for_board(board);
    EXPECT_EQ(model.family(), board.family);
    EXPECT_GT(model.predict(hw::Config::vta_default()).at("LUT"), 0) << name;
  }
}

void expect_error(const std::string& text, const std::vector<std::string>& words) {
  fs::path file = fs::temp_directory_path() / "kiln-resource-model-bad.json";
  std::ofstream(file) << text;
  try {
    ResourceModel::from_file(file);
    FAIL() << "no error for " << text;
  } catch (const hw::Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    for (const std::string& w : words) EXPECT_NE(what.find(w), std::string::npos) << what;
  }
  fs::remove(file);
}

TEST(ResourceModel, MalformedCalibrationNamesFileAndField) {
  const std::string cfg = R"({"LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5,
      "LOG_BATCH": 0, "LOG_BLOCK": 2, "LOG_UOP_BUFF_SIZE": 10, "LOG_INP_BUFF_SIZE": 10,
      "LOG_WGT_BUFF_SIZE": 12, "LOG_ACC_BUFF_SIZE": 12})";
  expect_error("{", {"not valid JSON"});
  expect_error(R"({"top": "kiln_top", "points": []})", {"family"});
  expect_error(R"({"family": "xc9", "top": "kiln_top", "points": []})", {"xc9"});
  expect_error(R"({"family": "xc7", "top": "kiln_top", "points": [{"config": )" + cfg + "}]}",
               {"points[0]", "used"});
  expect_error(R"({"family": "xc7", "top": "kiln_top", "points": [{"config": )" + cfg +
                   R"(, "used": {"LUT": 1, "FF": 1, "DSP": 1, "BRAM": 1}}]})",
               {"points[0].used", "SPRAM"});
  expect_error(R"({"family": "xc7", "top": "kiln_top", "points": [{"config": )" + cfg +
                   R"(, "used": {"LUT": "many", "FF": 1, "DSP": 1, "BRAM": 1, "SPRAM": 0}}]})",
               {"points[0].used.LUT"});
  expect_error(R"({"family": "xc7", "top": "kiln_top", "points": [{"config": {"LOG_BLOCK": 2},
                   "used": {}}]})",
               {"points[0].config", "LOG_"});
}

// A bigger GEMM or a deeper buffer never predicts fewer DSP, BRAM, FF or LUT, on each
// shipped calibration. (Across 64 words a Xilinx scratchpad moves from LUT RAM and its
// FF read register to BRAM, as Yosys moves it, so there only DSP and BRAM compare.)
TEST_P(ShippedCalibration, BiggerNeverPredictsFewer) {
  const fs::path file = calibration(GetParam());
  ASSERT_TRUE(fs::is_regular_file(file)) << "explore/calibration ships one file per family; none for " << GetParam();
  ResourceModel model = ResourceModel::from_file(file);
  auto no_fewer = [&](const hw::Config& small, const hw::Config& big, bool logic) {
    auto a = model.predict(small), b = model.predict(big);
    for (std::string kind : {"DSP", "BRAM", "FF", "LUT"}) {
      if ((kind == "LUT" || kind == "FF") && !logic) continue;
      EXPECT_LE(a[kind], b[kind] + 1e-9) << kind << ": " << small.canonical() << " vs "
                                         << big.canonical();
    }
  };
  // GEMM: LOG_BLOCK 2 -> 3 -> 4 with the same buffer bytes, and LOG_BATCH 0 -> 1.
  no_fewer(make(0, 2, 12, 12, 15, 14), make(0, 3, 12, 12, 15, 14), true);
  no_fewer(make(0, 3, 12, 12, 15, 14), make(0, 4, 12, 12, 15, 14), true);
  no_fewer(make(0, 3, 12, 13, 15, 15), make(1, 3, 12, 13, 15, 15), true);
  // Each buffer deeper, one at a time.
  const hw::Config base = make(0, 3, 12, 12, 14, 14);
  no_fewer(base, make(0, 3, 13, 12, 14, 14), true);
  no_fewer(base, make(0, 3, 12, 13, 14, 14), true);
  no_fewer(base, make(0, 3, 12, 12, 15, 14), true);
  no_fewer(base, make(0, 3, 12, 12, 14, 15), true);
  no_fewer(make(0, 4, 12, 12, 14, 14), make(0, 4, 12, 12, 15, 14), false);  // WGT 64 -> 128 words
}

}  // namespace
}  // namespace kiln::explore
