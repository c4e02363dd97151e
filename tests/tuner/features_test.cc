// Features from lowered loop IR and knobs.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tuner/features.h"
#include "tuner/template.h"

namespace kiln::tuner {
namespace {

struct Candidate {
  std::vector<float> ir, all;
};

Candidate features_of(const Workload& w, const std::map<std::string, std::string>& knobs) {
  const Template& t = *templates_for(w.op, "cpu").at(0);
  ConfigSpace s = t.space(w);
  int64_t i = s.index_of(knobs);
  EXPECT_GE(i, 0);
  Config c = s.get(i);
  auto funcs = lower_candidate(t, w, c);
  return {loop_features(funcs.at(0)), candidate_features(funcs, s, c)};
}

float named(const std::vector<float>& f, const std::string& name) {
  auto names = loop_feature_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return f.at(i);
  ADD_FAILURE() << "no feature " << name;
  return 0;
}

float lg(double v) { return static_cast<float>(std::log2(1 + v)); }

TEST(Features, FloatOpsCountAMultiplyAddAsTwo) {
  Workload w = parse_workload("matmul:M=16,N=32,K=8");
  const Template& t = *templates_for("matmul", "cpu").at(0);
  ConfigSpace s = t.space(w);
  for (int64_t i : {int64_t{0}, s.size() / 2, s.size() - 1})  // any schedule of it
    EXPECT_DOUBLE_EQ(float_ops(lower_candidate(t, w, s.get(i))), 2.0 * 16 * 32 * 8) << i;
}

TEST(Features, FixedLengthAndDocumentedNames) {
  Workload w = parse_workload("matmul:M=64,N=64,K=64");
  const Template& t = *templates_for("matmul", "cpu").at(0);
  ConfigSpace s = t.space(w);
  std::set<std::vector<float>> distinct;
  for (int64_t i = 0; i < s.size(); i += 37) {
    Config c = s.get(i);
    auto funcs = lower_candidate(t, w, c);
    std::vector<float> f = candidate_features(funcs, s, c);
    EXPECT_EQ(loop_features(funcs[0]).size(), loop_feature_names().size());
    EXPECT_EQ(f.size(), loop_feature_names().size() + knob_features(s, c).size());
    distinct.insert(loop_features(funcs[0]));
  }
  EXPECT_GT(distinct.size(), 5u) << "different schedules must look different to the model";
}

TEST(Features, MatmulCountsFlopsLanesAndStrides) {
  Workload w = parse_workload("matmul:M=64,N=64,K=64");
  std::map<std::string, std::string> knobs = {{"tile_i", "[16,4]"}, {"tile_j", "[2,32]"}, {"tile_k", "[64,1]"},
                                              {"order", "[0,1,2]"}, {"unroll_i", "none"}, {"parallel", "outer"}, {"pack_b", "none"}, {"block_i", "1"}};
  Candidate c = features_of(w, knobs);
  // 64^3 multiply-adds: 2 * 64^3 flops, counted per vector lane.
  EXPECT_NEAR(named(c.ir, "flops"), lg(2.0 * 64 * 64 * 64), 0.05);
  EXPECT_FLOAT_EQ(named(c.ir, "max_lanes"), lg(32));  // the 32 columns of a tile are one vector
  EXPECT_FLOAT_EQ(named(c.ir, "parallel_loops"), lg(1));
  // The heaviest store accumulates in the local tile; its innermost loop is the row
  // loop (extent 4), outside it k (64), whose stride in B is one row (64 floats).
  EXPECT_FLOAT_EQ(named(c.ir, "loop7.extent"), lg(4));
  EXPECT_FLOAT_EQ(named(c.ir, "loop6.extent"), lg(64));
  EXPECT_FLOAT_EQ(named(c.ir, "loop6.buf2.stride"), lg(64));  // B[k, j]
  EXPECT_FLOAT_EQ(named(c.ir, "loop6.buf0.reuse"), 1.0f);     // the accumulator is reused along k
  EXPECT_FLOAT_EQ(named(c.ir, "body.muls"), lg(32));  // one vector multiply-add of 32 lanes
  // Unrolling the rows changes the annotations seen by the model.
  knobs["unroll_i"] = "unroll";
  Candidate u = features_of(w, knobs);
  EXPECT_NE(c.ir, u.ir);
  EXPECT_NE(c.all, u.all);
}

TEST(Features, ConvolutionFeaturesDependOnTheTile) {
  Workload w = parse_workload("conv2d:C=16,H=14,W=14,O=32,KH=3,pad=1");
  std::map<std::string, std::string> knobs = {{"tile_ow", "[7,2]"}, {"tile_oh", "[14,1]"}, {"tile_rc", "[8,2]"}, {"tile_oc", "[2,1]"},
                                              {"reduce_order", "[0,1,2,3]"}, {"unroll_kw", "none"},   {"parallel", "n_oc"}};
  Candidate a = features_of(w, knobs);
  knobs["tile_ow"] = "[1,14]";
  Candidate b = features_of(w, knobs);
  EXPECT_NEAR(named(a.ir, "flops"), lg(2.0 * 32 * 14 * 14 * 16 * 9), 0.05);
  EXPECT_NE(a.ir, b.ir);
}

}  // namespace
}  // namespace kiln::tuner
