// Transposes on the CPU: where a kernel reads a tensor across its rows along the output's
// innermost axis and in order along another (attention's K^T, a matrix transpose),
// lower_group splits the innermost axis by the vector and runs the in-order axis between
// its halves, so each tile reads whole lines of a few rows. Results against the
// interpreter, on the host and on narrower targets; the loop nest on the host.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend-cpu/graph_backend.h"
#include "tests/cpu/kernel_test_util.h"

namespace kiln::graph {
namespace {

const ir::DataType f32 = ir::DataType::Float(32);

// The extents of the loops around each vector store of a kernel, outermost first.
std::vector<std::vector<int64_t>> loops_around_vector_stores(const schedule::LoweredFunc& f) {
  class Walk : public ir::IRVisitor {
   public:
    explicit Walk(std::vector<std::vector<int64_t>>* out) : out_(out) {}
    using IRVisitor::visit;

   protected:
    void visit_(const ir::ForNode* op) override {
      const int64_t* e = ir::as_const_int(op->extent);
      loops_.push_back(e ? *e : -1);
      IRVisitor::visit_(op);
      loops_.pop_back();
    }
    void visit_(const ir::StoreNode* op) override {
      if (op->value.dtype().lanes() > 1) out_->push_back(loops_);
      IRVisitor::visit_(op);
    }

   private:
    std::vector<std::vector<int64_t>>* out_;
    std::vector<int64_t> loops_;
  };
  std::vector<std::vector<int64_t>> out;
  Walk(&out).visit(f.body);
  return out;
}

struct Case {
  std::string what;
  std::vector<int64_t> perm;
  std::vector<int64_t> loops;  // on the host: the loops around the vector store, outermost first
};

class TransposeKernels : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cpu::register_graph_backend(); }
};

// K^T of 12 heads of 64 from the middle third of a 128 x 2304 product (as BERT's
// attention reads it): the tile is 16 tokens by the 64 dimensions of a head, 96 tiles
// in parallel. Q's layout (the head dimension stays innermost) reads rows in order:
// the default schedule, rows in parallel and 4 vectors each.
TEST_P(TransposeKernels, AHeadsKeysAreReadInTilesOfWholeLines) {
  const std::string target = GetParam();
  for (const Case& c : {Case{"K^T", {0, 2, 3, 1}, {96, 64}}, Case{"Q", {0, 2, 1, 3}, {1536, 4}}}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, {128, 2304}});
    NodeId sl = g.add_op("strided_slice", {x},
                         {{"begin", std::vector<int64_t>{0, 768}}, {"end", std::vector<int64_t>{128, 1536}}, {"steps", std::vector<int64_t>{1, 1}}});
    NodeId r = g.add_op("reshape", {sl}, {{"shape", std::vector<int64_t>{1, 128, 12, 64}}});
    g.add_output(g.add_op("relu", {g.add_op("transpose", {r}, {{"perm", c.perm}})}), "y");
    auto in = test::random_floats(128 * 2304, 7);
    CompiledModel m;
    std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
    EXPECT_EQ(got, test_util::run_graph(g, in, "interp", "")) << c.what << " on " << target;
    ASSERT_EQ(m.kernels.size(), 1u);
    auto stores = loops_around_vector_stores(m.kernels[0].func);
    ASSERT_FALSE(stores.empty()) << c.what << " on " << target;
    if (target == "llvm") {
      EXPECT_EQ(stores[0], c.loops) << c.what;
    }
  }
}

// A matrix transpose, 48 x 256 to 256 x 48 and back: the tile reads 16 (or the target's
// vector) rows along the other axis.
TEST_P(TransposeKernels, AMatrixTransposeMatchesTheInterpreter) {
  const std::string target = GetParam();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{48, 256}, std::vector<int64_t>{256, 48}}) {
    Graph g;
    NodeId x = g.add_input("x", {f32, shape});
    g.add_output(g.add_op("negative", {g.add_op("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}})}), "y");
    auto in = test::random_floats(48 * 256, 9);
    CompiledModel m;
    std::vector<float> got = test_util::run_graph(g, in, "cpu", target, 0, &m);
    EXPECT_EQ(got, test_util::run_graph(g, in, "interp", "")) << shape[0] << " x " << shape[1] << " on " << target;
    auto stores = loops_around_vector_stores(m.kernels.at(0).func);
    ASSERT_FALSE(stores.empty());
    EXPECT_EQ(stores[0].back(), shape[1]) << "the rows read in order inside the tile, " << shape[0] << " x " << shape[1];
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, TransposeKernels, ::testing::ValuesIn(test_util::kKernelTargets), test_util::kernel_target_name);

}  // namespace
}  // namespace kiln::graph
