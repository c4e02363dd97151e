// Search spaces: mixed-radix indexing, split factor lists, knob lookup; workload specs.
#include <gtest/gtest.h>

#include <set>

#include "tuner/space.h"
#include "tuner/template.h"
#include "tuner/workload.h"

namespace kiln::tuner {
namespace {

ConfigSpace small_space() {
  ConfigSpace s;
  s.define_split("tile", 12, 2, SplitPolicy::Factors);       // 6 choices
  s.define_split("tile3", 8, 3, SplitPolicy::PowerOfTwo, 4);  // inner parts <= 4
  s.define_reorder("order", {{0, 1}, {1, 0}});
  s.define_annotate("ann", {"none", "unroll", "vectorize"});
  return s;
}

TEST(Space, SplitFactorListsMultiplyToTheExtent) {
  ConfigSpace s = small_space();
  const Knob& k = s.knob("tile");
  ASSERT_EQ(k.choices.size(), 6u);  // 1, 2, 3, 4, 6, 12
  std::set<int64_t> inner;
  for (const auto& c : k.choices) {
    ASSERT_EQ(c.ints.size(), 2u);
    EXPECT_EQ(c.ints[0] * c.ints[1], 12);
    inner.insert(c.ints[1]);
  }
  EXPECT_EQ(inner, (std::set<int64_t>{1, 2, 3, 4, 6, 12}));
  for (const auto& c : s.knob("tile3").choices) {
    ASSERT_EQ(c.ints.size(), 3u);
    EXPECT_EQ(c.ints[0] * c.ints[1] * c.ints[2], 8);
    EXPECT_LE(c.ints[1], 4);
    EXPECT_LE(c.ints[2], 4);
  }
}

// A listed split's factors divide the extent; its partial ones need not: the outer part
// rounds up (the last tile partial). A factor that does not divide, listed as whole, or
// a partial one beyond the extent, is an error naming the split.
TEST(Space, ListedSplitsTakePartialTilesOnlyWhereAsked) {
  ConfigSpace s;
  s.define_split_list("tile_ow", 109, {1, 109}, {8, 6});
  const Knob& k = s.knob("tile_ow");
  ASSERT_EQ(k.choices.size(), 4u);
  EXPECT_EQ(k.choices[2].ints, (std::vector<int64_t>{14, 8}));
  EXPECT_EQ(k.choices[3].ints, (std::vector<int64_t>{19, 6}));
  EXPECT_EQ(s.get(2).factor("tile_ow"), 8);
  auto error_of = [](auto&& define) -> std::string {
    ConfigSpace t;
    try {
      define(t);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of([](ConfigSpace& t) { t.define_split_list("tile_ow", 109, {8}); }).find("split 'tile_ow': 8 does not divide 109"),
            std::string::npos);
  EXPECT_NE(error_of([](ConfigSpace& t) { t.define_split_list("tile_ow", 5, {}, {8}); }).find("split 'tile_ow'"), std::string::npos);
}

TEST(Space, MixedRadixIndexRoundTrips) {
  ConfigSpace s = small_space();
  int64_t expect = 1;
  for (const auto& k : s.knobs()) expect *= static_cast<int64_t>(k.choices.size());
  ASSERT_EQ(s.size(), expect);
  std::set<std::vector<int>> seen;
  for (int64_t i = 0; i < s.size(); ++i) {
    std::vector<int> d = s.digits(i);
    EXPECT_EQ(s.index_of(d), i);
    EXPECT_TRUE(seen.insert(d).second) << "two indices share digits";
    Config c = s.get(i);
    EXPECT_EQ(s.index_of(c.describe()), i);
  }
  // Knob 0 is the least significant digit.
  EXPECT_EQ(s.digits(1)[0], 1);
  EXPECT_EQ(s.digits(6)[0], 0);
  EXPECT_EQ(s.digits(6)[1], 1);
  EXPECT_THROW(s.digits(s.size()), std::out_of_range);
  EXPECT_THROW(s.digits(-1), std::out_of_range);
  EXPECT_EQ(s.index_of(std::map<std::string, std::string>{{"tile", "[1,12]"}}), -1);
}

TEST(Space, ConfigNamesItsChoices) {
  ConfigSpace s = small_space();
  Config c = s.get(s.index_of(std::vector<int>{2, 0, 1, 2}));
  EXPECT_EQ(c.factor("tile"), 3);
  EXPECT_EQ(c["order"].ints, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(c.name("ann"), "vectorize");
  EXPECT_THROW(c["nope"], std::out_of_range);
  EXPECT_THROW(s.define_knob("ann", {"a"}), std::invalid_argument);
}

TEST(Workload, ParsesSpecsAndNamesErrors) {
  Workload m = parse_workload("matmul:M=64,N=32,K=16");
  EXPECT_EQ(m.key(), "matmul:M=64,N=32,K=16");
  EXPECT_DOUBLE_EQ(m.flops(), 2.0 * 64 * 32 * 16);
  Workload c = parse_workload("conv2d:C=64,H=56,W=56,O=64,KH=3,pad=1");
  EXPECT_EQ(c.key(), "conv2d:N=1,C=64,H=56,W=56,O=64,KH=3,KW=3,stride=1,pad=1,block=16");
  EXPECT_EQ(parse_workload(c.key()).key(), c.key());
  auto error_of = [](const std::string& spec) {
    try {
      parse_workload(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("softmax:M=1").find("unknown operator 'softmax'"), std::string::npos);
  EXPECT_NE(error_of("matmul:M=64,N=64").find("needs K"), std::string::npos);
  EXPECT_NE(error_of("matmul:M=64,N=64,K=x").find("K=x is not a positive integer"), std::string::npos);
  EXPECT_NE(error_of("matmul:M=64,N=64,K=64,Q=1").find("no parameter 'Q'"), std::string::npos);
  EXPECT_NE(error_of("matmul").find("give the shape"), std::string::npos);
  EXPECT_NE(error_of("conv2d:C=3,H=8,W=8,O=12,KH=3,block=16").find("not a multiple"), std::string::npos);
  // Grouped: the block from a group's output channels (4 for ResNeXt's groups of 4), the
  // groups in the key only when more than one, flops a group's share of the channels.
  Workload grouped = parse_workload("conv2d:C=128,H=16,W=16,O=128,KH=3,pad=1,groups=32");
  EXPECT_EQ(grouped.key(), "conv2d:N=1,C=128,H=16,W=16,O=128,KH=3,KW=3,stride=1,pad=1,block=4,groups=32");
  EXPECT_EQ(parse_workload(grouped.key()).key(), grouped.key());
  EXPECT_DOUBLE_EQ(grouped.flops(), 2.0 * 128 * 16 * 16 * 4 * 9);
  EXPECT_EQ(parse_workload("conv2d:C=16,H=8,W=8,O=16,KH=3,groups=1").key(), parse_workload("conv2d:C=16,H=8,W=8,O=16,KH=3").key());
  EXPECT_NE(error_of("conv2d:C=16,H=8,W=8,O=16,KH=3,groups=3").find("groups=3 does not divide C=16"), std::string::npos);
  EXPECT_NE(error_of("conv2d:C=16,H=8,W=8,O=16,KH=3,groups=8").find("2 output channels have no channel block"), std::string::npos);
  EXPECT_NE(error_of("conv2d:C=64,H=8,W=8,O=64,KH=3,groups=4,block=32").find("a group's O=16 is not a multiple of block=32"),
            std::string::npos);
  // A Winograd convolution: its tile as the winograd_conv pass picks it (4 where it
  // divides the output), flops those of the direct convolution.
  Workload wg = parse_workload("conv2d_winograd:C=64,H=56,W=56,O=64");
  EXPECT_EQ(wg.key(), "conv2d_winograd:N=1,C=64,H=56,W=56,O=64,pad=1,tile=4,block=16,in_block=16");
  EXPECT_EQ(parse_workload(wg.key()).key(), wg.key());
  EXPECT_DOUBLE_EQ(wg.flops(), 2.0 * 64 * 56 * 56 * 64 * 9);
  EXPECT_EQ(parse_workload("conv2d_winograd:C=256,H=14,W=14,O=256").at("tile"), 2);
  EXPECT_NE(error_of("conv2d_winograd:C=16,H=8,W=8,O=16,tile=3").find("tiles are 2 or 4"), std::string::npos);
  EXPECT_NE(error_of("conv2d_winograd:C=16,H=8,W=8,O=16,KH=3").find("no parameter 'KH'"), std::string::npos);
  EXPECT_NE(error_of("conv2d_winograd:C=12,H=8,W=8,O=16,in_block=8").find("C=12 is not a multiple of in_block=8"), std::string::npos);
  EXPECT_NE(error_of("conv2d_winograd:C=16,H=1,W=8,O=16,pad=0").find("larger than the padded input"), std::string::npos);
}

TEST(Templates, CpuTemplatesAreRegisteredAndTheirSpacesDecode) {
  for (const char* spec : {"matmul:M=64,N=64,K=64", "dense:M=8,N=32,K=16", "conv2d:C=16,H=14,W=14,O=32,KH=3,pad=1"}) {
    Workload w = parse_workload(spec);
    auto ts = templates_for(w.op, "cpu");
    ASSERT_EQ(ts.size(), 1u) << spec;
    ConfigSpace s = ts[0]->space(w);
    EXPECT_GT(s.size(), 50) << spec;
    // A few configurations lower to one function each.
    for (int64_t i : {int64_t{0}, s.size() / 2, s.size() - 1}) EXPECT_EQ(lower_candidate(*ts[0], w, s.get(i)).size(), 1u);
  }
  EXPECT_THROW(find_template("nope.cpu"), std::invalid_argument);
}

}  // namespace
}  // namespace kiln::tuner
