// Tensorize (match and mismatch), virtual threads and double buffering.
#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/schedule/tensorize.h"
#include "compiler/support/error.h"
#include "compiler/te/ops.h"
#include "test_util.h"

namespace kiln {
namespace {

using ir::DataType;
using schedule::BufferRegion;
using schedule::create_schedule;
using schedule::IntrinImpl;
using schedule::lower;
using te::Tensor;

// A 4x4x4 GEMM "instruction", implemented as plain loops over the regions so the
// interpreter can run it; a pragma marks where it was placed.
std::shared_ptr<const schedule::TensorIntrin> gemm_intrin(int n = 4, bool transposed_b = false) {
  auto a = te::placeholder({n, n}, DataType::Int(32), "a");
  auto b = te::placeholder({n, n}, DataType::Int(32), "b");
  auto k = te::reduce_axis(n, "k");
  auto c = te::compute({n, n}, [&](ir::Var i, ir::Var j) {
    return te::sum(a(i, k->var) * (transposed_b ? b(j, k->var) : b(k->var, j)), {k});
  }, "c");
  return schedule::decl_tensor_intrin("gemm" + std::to_string(n), c, [n](const std::vector<BufferRegion>& in, const BufferRegion& out) {
    ir::Var i("gi"), j("gj"), kk("gk");
    auto loops = [&](ir::Stmt body) {
      return ir::make_for(i, 0, n, ir::ForKind::Serial, ir::make_for(j, 0, n, ir::ForKind::Serial, body));
    };
    ir::Stmt init = loops(out.store(ir::make_int(0), {i, j}));
    ir::Stmt update = loops(ir::make_for(kk, 0, n, ir::ForKind::Serial,
                                         out.store(out.load({i, j}) + in[0].load({i, kk}) * in[1].load({kk, j}), {i, j})));
    auto mark = [](ir::Stmt s) { return ir::make_attr("pragma_gemm_intrin", ir::Expr(), 1, s); };
    return IntrinImpl{mark(ir::make_seq({init, update})), mark(init), mark(update)};
  });
}

struct Matmul {
  Tensor a, b, c;
  explicit Matmul(int n = 16, int k = 16) {
    a = te::placeholder({n, k}, DataType::Int(32), "A");
    b = te::placeholder({k, n}, DataType::Int(32), "B");
    c = te::matmul(a, b, "C");
  }
  std::vector<Tensor> args() const { return {a, b, c}; }
};

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(Tensorize, WholeReductionInside) {
  Matmul mm(16, 4);
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  s[mm.c].tensorize(t[2], gemm_intrin());
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_NE(text.find("pragma_gemm_intrin"), std::string::npos) << text;
  EXPECT_EQ(text.find("for (k,"), std::string::npos) << "the stage's own k loop must be gone\n" << text;
}

TEST(Tensorize, ReductionSplitAcrossTheBlock) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  auto [ko, ki] = s[mm.c].split(mm.c->reduce_axis[0], 4);
  s[mm.c].reorder({t[0], t[1], ko, t[2], t[3], ki});
  s[mm.c].tensorize(t[2], gemm_intrin());
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_NE(text.find("if (k.outer == 0)"), std::string::npos) << text;
}

TEST(Tensorize, WithCachedOperands) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto al = s.cache_read(mm.a, "local", {mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  auto [ko, ki] = s[mm.c].split(mm.c->reduce_axis[0], 4);
  s[mm.c].reorder({t[0], t[1], ko, t[2], t[3], ki});
  s[al].compute_at(s[mm.c], ko);
  s[mm.c].tensorize(t[2], gemm_intrin());
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
}

TEST(Tensorize, Elementwise) {
  auto a = te::placeholder({6, 16}, DataType::Float(32), "A");
  auto b = te::placeholder({6, 16}, DataType::Float(32), "B");
  auto c = te::add(a, b);
  auto x = te::placeholder({8}, DataType::Float(32), "x");
  auto y = te::placeholder({8}, DataType::Float(32), "y");
  auto z = te::compute({8}, [&](ir::Var i) { return x(i) + y(i); }, "z");
  auto vadd = schedule::decl_tensor_intrin("vadd8", z, [](const std::vector<BufferRegion>& in, const BufferRegion& out) {
    ir::Var i("vi");
    return IntrinImpl{ir::make_for(i, 0, 8, ir::ForKind::Vectorized, out.store(in[0].load({i}) + in[1].load({i}), {i})), {}, {}};
  });
  auto s = create_schedule({c});
  auto [jo, ji] = s[c].split(c->axis[1], 8);
  (void)jo;
  s[c].tensorize(ji, vadd);
  EXPECT_TRUE(test::same_as_unscheduled(s, {a, b, c}));
  std::string text = ir::to_string(lower(s, {a, b, c}).body);
  EXPECT_NE(text.find("ramp("), std::string::npos) << text;
}

TEST(Tensorize, MismatchedComputation) {
  Matmul mm(16, 4);
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  s[mm.c].tensorize(t[2], gemm_intrin(4, /*transposed_b=*/true));
  std::string msg = error_of([&] { lower(s, mm.args()); });
  EXPECT_NE(msg.find("tensorize of stage 'C' at axis 'i.inner' with intrinsic 'gemm4'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not move with the intrinsic's access"), std::string::npos) << msg;
}

TEST(Tensorize, MismatchedOperation) {
  Matmul mm(16, 4);
  auto x = te::placeholder({4, 4}, DataType::Int(32), "x");
  auto y = te::placeholder({4, 4}, DataType::Int(32), "y");
  auto k = te::reduce_axis(4, "k");
  auto z = te::compute({4, 4}, [&](ir::Var i, ir::Var j) { return te::sum(x(i, k->var) + y(k->var, j), {k}); }, "z");
  auto bad = schedule::decl_tensor_intrin("addsum", z, [](const std::vector<BufferRegion>&, const BufferRegion&) {
    return IntrinImpl{ir::make_no_op(), {}, {}};
  });
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  s[mm.c].tensorize(t[2], bad);
  std::string msg = error_of([&] { lower(s, mm.args()); });
  EXPECT_NE(msg.find("the stage computes A(i.outer*4 + i, k)*B(k, j.outer*4 + j) but the intrinsic computes x(i, k) + y(k, j)"),
            std::string::npos)
      << msg;
}

TEST(Tensorize, MismatchedShape) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 8, 4);
  s[mm.c].tensorize(t[2], gemm_intrin());
  std::string msg = error_of([&] { lower(s, mm.args()); });
  EXPECT_NE(msg.find("axis 'i' covers 8 values inside the tensorized loops but the intrinsic's axis 'i' covers 4"), std::string::npos)
      << msg;
}

TEST(Tensorize, SplitReductionNeedsInitAndUpdate) {
  Matmul mm;
  auto a = te::placeholder({4, 4}, DataType::Int(32), "a");
  auto b = te::placeholder({4, 4}, DataType::Int(32), "b");
  auto k = te::reduce_axis(4, "k");
  auto c = te::compute({4, 4}, [&](ir::Var i, ir::Var j) { return te::sum(a(i, k->var) * b(k->var, j), {k}); }, "c");
  auto body_only = schedule::decl_tensor_intrin("gemm_body_only", c, [](const std::vector<BufferRegion>&, const BufferRegion&) {
    return IntrinImpl{ir::make_no_op(), {}, {}};
  });
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  auto [ko, ki] = s[mm.c].split(mm.c->reduce_axis[0], 4);
  s[mm.c].reorder({t[0], t[1], ko, t[2], t[3], ki});
  s[mm.c].tensorize(t[2], body_only);
  std::string msg = error_of([&] { lower(s, mm.args()); });
  EXPECT_NE(msg.find("reduction axis 'k.outer' is outside the tensorized loops"), std::string::npos) << msg;
}

TEST(Tensorize, UnevenSplitInsideTheBlock) {
  Matmul mm(14, 4);
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  s[mm.c].tensorize(t[2], gemm_intrin());
  std::string msg = error_of([&] { lower(s, mm.args()); });
  EXPECT_NE(msg.find("does not divide evenly"), std::string::npos) << msg;
}

TEST(VirtualThread, InterleavesAndGivesEachThreadItsBuffers) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto cl = s.cache_write(mm.c, "local");
  auto [io, ii] = s[mm.c].split(mm.c->axis[0], 8);
  auto [tx, iii] = s[mm.c].split(ii, 4);
  s[mm.c].bind(tx, "vthread");
  s[cl].compute_at(s[mm.c], tx);
  (void)io;
  (void)iii;
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_EQ(text.find("vthread"), std::string::npos) << text;
  EXPECT_NE(text.find("allocate C.local: int32[128]"), std::string::npos) << "two threads, 64 elements each\n" << text;
  // both threads' updates sit in one reduction loop, one after the other
  size_t k = text.find("for (k, 0, 16)");
  ASSERT_NE(k, std::string::npos) << text;
  size_t first = text.find("C.local[", k), second = text.find("C.local[", text.find("\n", first));
  size_t close = text.find("}", k);
  EXPECT_LT(second, close) << text;
}

TEST(DoubleBuffer, PipelinesTheFillOfTheNextIteration) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto al = s.cache_read(mm.a, "local", {mm.c});
  auto [ko, ki] = s[mm.c].split(mm.c->reduce_axis[0], 4);
  s[mm.c].reorder({ko, mm.c->axis[0], mm.c->axis[1], ki});
  s[al].compute_at(s[mm.c], ko);
  s[al].double_buffer();
  EXPECT_TRUE(test::same_as_unscheduled(s, mm.args()));
  std::string text = ir::to_string(lower(s, mm.args()).body);
  EXPECT_NE(text.find("allocate A.local: int32[128]"), std::string::npos) << text;
  EXPECT_NE(text.find("for (k.outer, 0, 3)"), std::string::npos) << text;
  EXPECT_NE(text.find("(k.outer + 1) % 2*64"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln
