// The search's bookkeeping on evaluated points: budgets, the utilization objective, the
// Pareto front, front dominance; and the records' detail the tiers write.
#include <gtest/gtest.h>

#include "boards/flow/synth.h"
#include "explore/search.h"
#include "tuner/records.h"

namespace kiln::explore {
namespace {

// A configuration synthesized to `lut` of 1000 LUTs and `dsp` of 100 DSPs, verified at
// `cycles` (0: not run on the RTL).
Evaluated point(double lut, double dsp, double cycles, std::optional<double> fmax = std::nullopt) {
  Evaluated e;
  tuner::Record s;
  s.template_name = kSynthTemplate;
  s.cost = 1;
  s.detail = {{"resources", {{"LUT", {{"used", lut}, {"available", 1000}}}, {"DSP", {{"used", dsp}, {"available", 100}}}}},
              {"fmax_mhz", fmax ? nlohmann::json(*fmax) : nlohmann::json(nullptr)}};
  e.synth = s;
  if (cycles > 0) {
    tuner::Record r;
    r.template_name = kRtlTemplate;
    r.cost = cycles;
    r.unit = "cycles";
    e.rtl = r;
  }
  return e;
}

ExploreContext context(double target_mhz = 0) {
  ExploreContext ctx;
  ctx.board.name = "test";
  ctx.board.target_mhz = target_mhz;
  ctx.board.available = {{"LUT", 1000}, {"DSP", 100}};
  return ctx;
}

TEST(ExploreSearch, BudgetsPerKindAndTheBoardsClock) {
  ExploreContext ctx = context();
  ExploreOptions opt;
  opt.budget = {{"LUT", 0.8}};
  std::string why;
  EXPECT_TRUE(fits_budget(point(800, 100, 1), ctx, opt, &why)) << why;
  EXPECT_FALSE(fits_budget(point(801, 10, 1), ctx, opt, &why));
  EXPECT_NE(why.find("LUT 801 of 1000 (80.1% > 80%)"), std::string::npos) << why;
  EXPECT_FALSE(fits_budget(point(100, 101, 1), ctx, opt, &why));  // kinds not named: the whole part
  EXPECT_NE(why.find("DSP"), std::string::npos);
  Evaluated failed;
  tuner::Record bad;
  bad.error = "error: yosys failed";
  failed.synth = bad;
  EXPECT_FALSE(fits_budget(failed, ctx, opt, &why));
  EXPECT_EQ(why, "error: yosys failed");
  ExploreContext ice = context(30);
  EXPECT_TRUE(fits_budget(point(100, 1, 1, 31.2), ice, opt));
  EXPECT_FALSE(fits_budget(point(100, 1, 1, 27.5), ice, opt, &why));
  EXPECT_NE(why.find("fmax 27.50 MHz < the board's 30 MHz"), std::string::npos) << why;
  EXPECT_DOUBLE_EQ(utilization(point(500, 90, 1), {"LUT"}), 0.5);
  EXPECT_DOUBLE_EQ(utilization(point(500, 90, 1), {"LUT", "DSP"}), 0.9);
}

TEST(ExploreSearch, ParetoFrontAndDominance) {
  std::vector<Evaluated> pts = {point(500, 10, 1000), point(400, 10, 2000), point(600, 10, 900), point(600, 10, 1500),
                                point(400, 10, 2000), point(900, 10, 800)};
  std::vector<size_t> all = {0, 1, 2, 3, 4, 5};
  // 3 is dominated by 0; 4 ties 1 exactly and only one of the two stays.
  EXPECT_EQ(pareto_front(pts, all, {"LUT"}), (std::vector<size_t>{5, 2, 0, 1}));
  ExploreResult a, b;
  a.points = pts;
  a.front = {5, 2, 0, 1};
  a.budget_kinds = {"LUT"};
  b.points = {point(700, 10, 1200), point(450, 10, 2500)};
  b.front = {0, 1};
  b.budget_kinds = {"LUT"};
  EXPECT_TRUE(front_dominates(a, b));
  EXPECT_FALSE(front_dominates(b, a));
  b.points.push_back(point(300, 10, 5000));  // cheaper than anything of a's
  b.front.push_back(2);
  EXPECT_FALSE(front_dominates(a, b));
}

TEST(ExploreSearch, TierDetailTravelsThroughResultsAndRecords) {
  tuner::MeasureResult m;
  m.cost = 123;
  m.unit = "cycles";
  m.detail = {{"tier", 3}, {"layers", {{{"name", "L1"}, {"cycles", 123}}}}};
  tuner::MeasureResult back = tuner::MeasureResult::from_json(m.to_json());
  EXPECT_EQ(back.detail, m.detail);
  tuner::Record r;
  r.template_name = kRtlTemplate;
  r.workload = "explore.rtl:test|conv2d:N=1";
  r.config = 7;
  r.cost = 123;
  r.unit = "cycles";
  r.detail = m.detail;
  tuner::Record again = tuner::Record::from_json(r.to_json());
  EXPECT_EQ(again.detail, m.detail);
  // A plain timing's record has no detail field at all.
  r.detail = nlohmann::json::object();
  EXPECT_EQ(r.to_json().find("detail"), std::string::npos);
  EXPECT_THROW(tuner::Record::from_json(R"({"version":1,"template":"t","workload":"w","target":"t","config":1,"knobs":{},)"
                                        R"("cost":1,"unit":"s","error":"","detail":[1]})"),
               std::exception);
}

}  // namespace
}  // namespace kiln::explore
