// Illegal schedules are errors that name the stage, the axis and the reason.
#include <gtest/gtest.h>

#include "compiler/support/error.h"
#include "compiler/te/ops.h"
#include "test_util.h"

namespace kiln {
namespace {

using ir::DataType;
using schedule::create_schedule;
using schedule::lower;
using te::Tensor;

// Runs `f` and returns the CompileError message ("" if none was thrown).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(stmt, ...)                                                        \
  do {                                                                                 \
    std::string msg = error_of([&] { stmt; });                                         \
    ASSERT_FALSE(msg.empty()) << "no error from " #stmt;                               \
    for (const char* part : {__VA_ARGS__}) EXPECT_NE(msg.find(part), std::string::npos) << "missing '" << part << "' in: " << msg; \
  } while (0)

struct Chain {
  Tensor a, b, c, d;
  Chain() {
    a = te::placeholder({16, 16}, DataType::Float(32), "A");
    b = te::compute({16, 16}, [&](ir::Var i, ir::Var j) { return a(i, j) + 1.0f; }, "B");
    c = te::compute({16, 16}, [&](ir::Var i, ir::Var j) { return b(i, j) * 2.0f; }, "C");
    d = te::compute({16, 16}, [&](ir::Var i, ir::Var j) { return c(i, j) - b(i, j); }, "D");
  }
};

TEST(ScheduleErrors, AxisOfAnotherStage) {
  Chain g;
  auto s = create_schedule({g.d});
  EXPECT_ERROR(s[g.c].split(g.d->axis[0], 4), "stage 'C'", "axis 'i'", "belongs to stage 'D'");
  EXPECT_ERROR(s[g.c].vectorize(g.b->axis[1]), "stage 'C'", "axis 'j'", "belongs to stage 'B'");
}

TEST(ScheduleErrors, TwiceSplitAxis) {
  Chain g;
  auto s = create_schedule({g.d});
  s[g.d].split(g.d->axis[0], 4);
  EXPECT_ERROR(s[g.d].split(g.d->axis[0], 2), "stage 'D'", "split of axis 'i'", "already split");
  auto f = s[g.d].fuse(s[g.d]->leaf_iter_vars[0], s[g.d]->leaf_iter_vars[1]);
  EXPECT_ERROR(s[g.d].reorder({s[g.d]->leaf_iter_vars[1], g.d->axis[0]}), "stage 'D'", "axis 'i'", "already split or fused");
  (void)f;
}

TEST(ScheduleErrors, BadArguments) {
  Chain g;
  auto s = create_schedule({g.d});
  EXPECT_ERROR(s[g.d].split(g.d->axis[0], 0), "stage 'D'", "axis 'i'", "factor must be positive");
  EXPECT_ERROR(s[g.d].fuse(g.d->axis[1], g.d->axis[0]), "stage 'D'", "axis 'j'", "directly inside");
  EXPECT_ERROR(s[g.d].reorder({g.d->axis[0], g.d->axis[0]}), "stage 'D'", "axis 'i'", "appears twice");
  EXPECT_ERROR(s[g.d].bind(g.d->axis[0], "warpIdx"), "stage 'D'", "unknown thread axis 'warpIdx'");
  s[g.d].bind(g.d->axis[0], "threadIdx.x");
  EXPECT_ERROR(s[g.d].bind(g.d->axis[1], "threadIdx.x"), "stage 'D'", "axis 'j'", "already bound to 'i'");
  EXPECT_ERROR(s[g.a].split(g.b->axis[0], 2), "stage 'A'", "placeholder");
}

TEST(ScheduleErrors, ReductionAxes) {
  auto a = te::placeholder({8, 8}, DataType::Float(32), "A");
  auto b = te::placeholder({8, 8}, DataType::Float(32), "B");
  auto c = te::matmul(a, b, "C");
  auto s = create_schedule({c});
  ir::IterVar r = te::reduce_axis(8, "r");
  auto p = te::compute({8}, [&](ir::Var i) { return te::prod(a(i, r->var), {r}); }, "P");
  auto sp = create_schedule({p});
  EXPECT_ERROR(sp[p].vectorize(r), "stage 'P'", "axis 'r'", "vectorized only in a sum, maximum or minimum");
  EXPECT_ERROR(s[c].parallel(c->reduce_axis[0]), "stage 'C'", "axis 'k'", "reduction axis cannot run in parallel");
  EXPECT_ERROR(s[c].fuse(c->axis[1], c->reduce_axis[0]), "stage 'C'", "axis 'j'", "reduction axis");
  auto d = te::compute({8, 8}, [&](ir::Var i, ir::Var j) { return c(i, j) * 2.0f; }, "D");
  auto s2 = create_schedule({d});
  EXPECT_ERROR(s2[c].compute_inline(), "stage 'C'", "reduction cannot be inlined");
}

TEST(ScheduleErrors, Placement) {
  Chain g;
  auto s = create_schedule({g.d});
  EXPECT_ERROR(s[g.d].compute_inline(), "stage 'D'", "output stage cannot be inlined");
  EXPECT_ERROR(s[g.d].compute_at(s[g.c], g.c->axis[0]), "stage 'D'", "output stage must be computed at the root");
  EXPECT_ERROR(s[g.c].compute_at(s[g.c], g.c->axis[0]), "stage 'C'", "cannot be computed at itself");
  EXPECT_ERROR(s[g.c].compute_at(s[g.d], g.c->axis[0]), "axis 'i'", "belongs to stage 'C'");
  s[g.c].compute_inline();
  EXPECT_ERROR(s[g.c].split(g.c->axis[0], 2), "stage 'C'", "was inlined");
}

TEST(ScheduleErrors, ComputeAtWhoseBoundsCannotHold) {
  {  // B is read by D at the root and by C inside D's loop: C is attached elsewhere
    Chain g;
    auto s = create_schedule({g.d});
    s[g.b].compute_at(s[g.c], g.c->axis[0]);
    EXPECT_ERROR(lower(s, {g.a, g.d}), "compute_at of stage 'B'", "axis 'i' of stage 'C'", "consumer 'D' is not computed inside that loop");
  }
  {  // attaching a stage to its producer
    Chain g;
    auto s = create_schedule({g.d});
    s[g.c].compute_at(s[g.b], g.b->axis[1]);
    EXPECT_ERROR(lower(s, {g.a, g.d}), "compute_at of stage 'C'", "axis 'j' of stage 'B'", "is a producer");
  }
  {  // the loop C was attached to was split afterwards
    Chain g;
    auto s = create_schedule({g.d});
    s[g.b].compute_inline();
    s[g.c].compute_at(s[g.d], g.d->axis[1]);
    s[g.d].split(g.d->axis[1], 4);
    EXPECT_ERROR(lower(s, {g.a, g.d}), "compute_at of stage 'C'", "axis 'j' of stage 'D'", "no longer a loop");
  }
  {  // an attached stage's loops have symbolic extents, so they cannot be vectorized
    auto a = te::placeholder({10}, DataType::Int(32), "A");
    auto b = te::compute({10}, [&](ir::Var i) { return a(i) + 1; }, "B");
    auto c = te::compute({10}, [&](ir::Var i) { return b(i) * 2; }, "C");
    auto s = create_schedule({c});
    auto [o, in] = s[c].split(c->axis[0], 4);
    s[b].compute_at(s[c], o);
    s[b].vectorize(b->axis[0]);
    (void)in;
    EXPECT_ERROR(lower(s, {a, c}), "stage 'B'", "vectorize of axis 'i'", "not a constant");
  }
}

TEST(ScheduleErrors, CachePrimitives) {
  Chain g;
  auto s = create_schedule({g.d});
  s[g.d].split(g.d->axis[0], 2);
  EXPECT_ERROR(s.cache_write(g.d, "local"), "stage 'D'", "cache_write must come before any other primitive");
  EXPECT_ERROR(s.cache_read(g.a, "shared", {g.c}), "stage 'A'", "'C' does not read 'A'");
  EXPECT_ERROR(s[g.d].set_scope("local"), "stage 'D'", "output lives in global memory");
}

TEST(ScheduleErrors, LowerArguments) {
  Chain g;
  auto s = create_schedule({g.d});
  EXPECT_ERROR(lower(s, {g.d}), "input 'A' must be one of the arguments");
  EXPECT_ERROR(lower(s, {g.a}), "output 'D' must be one of the arguments");
  auto other = te::placeholder({2}, DataType::Float(32), "Other");
  EXPECT_ERROR(lower(s, {g.a, g.d, other}), "argument 'Other' is not part of the schedule");
}

}  // namespace
}  // namespace kiln
