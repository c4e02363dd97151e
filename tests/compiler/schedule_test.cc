// Each schedule primitive alone, checked against the unscheduled program.
#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/te/ops.h"
#include "test_util.h"

namespace kiln {
namespace {

using schedule::create_schedule;
using schedule::lower;
using te::Tensor;

struct Matmul {
  Tensor a, b, c;
  explicit Matmul(int m = 16, int n = 12, int k = 8, ir::DataType t = ir::DataType::Float(32)) {
    a = te::placeholder({m, k}, t, "A");
    b = te::placeholder({k, n}, t, "B");
    c = te::matmul(a, b, "C");
  }
  std::vector<Tensor> args() const { return {a, b, c}; }
};

TEST(Schedule, UnscheduledMatmulLowers) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto f = lower(s, mm.args());
  std::string text = ir::to_string(f.body);
  EXPECT_NE(text.find("for (i, 0, 16)"), std::string::npos) << text;
  EXPECT_NE(text.find("C[i*12 + j] = C[i*12 + j] + A[i*8 + k]*B[k*12 + j]"), std::string::npos) << text;
  auto out = test::run(f, mm.args(), 3);
  // check one element by hand
  double want = 0;
  for (int k = 0; k < 8; ++k) want += out[0].get(2 * 8 + k) * out[1].get(k * 12 + 5);
  EXPECT_EQ(out[2].get(2 * 12 + 5), want);
}

TEST(Schedule, Split) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto [io, ii] = s[mm.c].split(mm.c->axis[0], 4);
  (void)io;
  (void)ii;
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
}

TEST(Schedule, SplitWithTail) {
  Matmul mm(13, 7, 5);
  auto s = create_schedule({mm.c});
  s[mm.c].split(mm.c->axis[0], 4);
  s[mm.c].split(mm.c->reduce_axis[0], 3);
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_EQ(text.find("likely"), std::string::npos) << "loop partition should remove the tail checks of the main loop\n" << text;
}

TEST(Schedule, SplitNparts) {
  Matmul mm(10, 6, 4);
  auto s = create_schedule({mm.c});
  s[mm.c].split_nparts(mm.c->axis[1], 4);
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
}

TEST(Schedule, TileVectorizeParallel) {
  Matmul mm(64, 64, 16);
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 8, 8);
  auto [ko, ki] = s[mm.c].split(mm.c->reduce_axis[0], 4);
  s[mm.c].reorder({t[0], t[1], ko, ki, t[2], t[3]});
  s[mm.c].vectorize(t[3]);
  s[mm.c].parallel(t[0]);
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_NE(text.find("ramp("), std::string::npos) << text;
  EXPECT_NE(text.find("parallel for (i.outer"), std::string::npos) << text;
}

TEST(Schedule, Fuse) {
  Matmul mm(6, 10, 4);
  auto s = create_schedule({mm.c});
  auto f = s[mm.c].fuse(mm.c->axis[0], mm.c->axis[1]);
  s[mm.c].split(f, 7);
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
}

TEST(Schedule, Reorder) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  s[mm.c].reorder({mm.c->reduce_axis[0], mm.c->axis[1], mm.c->axis[0]});
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
}

TEST(Schedule, Unroll) {
  Matmul mm(8, 8, 4);
  auto s = create_schedule({mm.c});
  auto [jo, ji] = s[mm.c].split(mm.c->axis[1], 4);
  (void)jo;
  s[mm.c].unroll(ji);
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_EQ(text.find("j.inner"), std::string::npos) << text;
}

TEST(Schedule, ComputeInline) {
  auto a = te::placeholder({8, 8}, ir::DataType::Float(32), "A");
  auto b = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return a(i, j) * 2.0f; }, "B");
  auto c = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return b(i, j) + b(j, i); }, "C");
  auto s = create_schedule({c});
  s[b].compute_inline();
  EXPECT_TRUE(test::same_as_unscheduled(s, {a, c}));
  std::string text = ir::to_string(lower(s, {a, c}).body);
  EXPECT_EQ(text.find("allocate"), std::string::npos) << text;
}

TEST(Schedule, ComputeAt) {
  auto a = te::placeholder({16, 16}, ir::DataType::Float(32), "A");
  auto b = te::compute({16, 16}, [&](ir::Var i, ir::Var j) { return a(i, j) + 1.0f; }, "B");
  auto c = te::compute({16, 16}, [&](ir::Var i, ir::Var j) { return b(i, j) * 3.0f; }, "C");
  auto s = create_schedule({c});
  auto [io, ii] = s[c].split(c->axis[0], 4);
  (void)ii;
  s[b].compute_at(s[c], io);
  EXPECT_TRUE(test::same_as_unscheduled(s, {a, c}));
  std::string text = ir::to_string(lower(s, {a, c}).body);
  EXPECT_NE(text.find("allocate B: float32[64]"), std::string::npos) << text;
}

TEST(Schedule, ComputeAtStencil) {
  auto a = te::placeholder({20}, ir::DataType::Int(32), "A");
  auto b = te::compute({20}, [&](ir::Var i) { return a(i) * 2; }, "B");
  auto c = te::compute({18}, [&](ir::Var i) { return b(i) + b(i + 1) + b(i + 2); }, "C");
  auto s = create_schedule({c});
  auto [io, ii] = s[c].split(c->axis[0], 4);
  (void)ii;
  s[b].compute_at(s[c], io);
  EXPECT_TRUE(test::same_as_unscheduled(s, {a, c}));
}

TEST(Schedule, ComputeRoot) {
  auto a = te::placeholder({8, 8}, ir::DataType::Float(32), "A");
  auto b = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return a(i, j) + 1.0f; }, "B");
  auto c = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return b(i, j) * 3.0f; }, "C");
  auto s = create_schedule({c});
  s[b].compute_at(s[c], c->axis[0]);
  s[b].compute_root();
  EXPECT_TRUE(test::same_as_unscheduled(s, {a, c}));
}

TEST(Schedule, CacheRead) {
  Matmul mm(16, 16, 8);
  auto s = create_schedule({mm.c});
  auto al = s.cache_read(mm.a, "local", {mm.c});
  auto [io, ii] = s[mm.c].split(mm.c->axis[0], 4);
  (void)ii;
  s[al].compute_at(s[mm.c], io);
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_NE(text.find("allocate A.local: float32[32] in local"), std::string::npos) << text;
}

TEST(Schedule, CacheWrite) {
  Matmul mm(16, 16, 8);
  auto s = create_schedule({mm.c});
  auto cl = s.cache_write(mm.c, "local");
  auto [io, ii] = s[mm.c].split(mm.c->axis[0], 4);
  (void)ii;
  s[cl].compute_at(s[mm.c], io);
  auto [ko, ki] = s[cl].split(cl->reduce_axis[0], 2);
  s[cl].reorder({ko, ki, cl->axis[0], cl->axis[1]});
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
}

TEST(Schedule, SetScopeAndPragma) {
  auto a = te::placeholder({8}, ir::DataType::Float(32), "A");
  auto b = te::compute({8}, [&](ir::Var i) { return a(i) + 1.0f; }, "B");
  auto c = te::compute({8}, [&](ir::Var i) { return b(i) * 2.0f; }, "C");
  auto s = create_schedule({c});
  s[b].set_scope("shared");
  s[c].pragma(c->axis[0], "debug_skip_region");
  EXPECT_TRUE(test::same_as_unscheduled(s, {a, c}));
  std::string text = ir::to_string(lower(s, {a, c}).body);
  EXPECT_NE(text.find("in shared"), std::string::npos) << text;
  EXPECT_NE(text.find("pragma_debug_skip_region"), std::string::npos) << text;
}

TEST(Schedule, BindGpuThreads) {
  Matmul mm(16, 16, 4);
  auto s = create_schedule({mm.c});
  auto [io, ii] = s[mm.c].split(mm.c->axis[0], 4);
  s[mm.c].bind(io, "blockIdx.x");
  s[mm.c].bind(ii, "threadIdx.x");
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_NE(text.find("bind threadIdx.x"), std::string::npos) << text;
}

TEST(Schedule, DebugIrPrintsEveryPass) {
  Matmul mm(4, 4, 4);
  auto s = create_schedule({mm.c});
  setenv("KILN_DEBUG", "ir", 1);
  testing::internal::CaptureStderr();
  lower(s, mm.args());
  std::string err = testing::internal::GetCapturedStderr();
  unsetenv("KILN_DEBUG");
  for (const char* pass : {"schedule_ops", "storage_flatten", "loop_partition", "vectorize_loop", "inject_virtual_thread",
                           "inject_double_buffer", "unroll_loop", "remove_no_op"}) {
    EXPECT_NE(err.find(std::string("after ") + pass), std::string::npos) << pass;
  }
}

}  // namespace
}  // namespace kiln
