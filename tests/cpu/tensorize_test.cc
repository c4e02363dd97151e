// Tensorized, virtual-threaded and double-buffered schedules (the compiler's
// tensorize_test programs) through the JIT, bit for bit against the interpreter.
#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/schedule/schedule.h"
#include "compiler/schedule/tensorize.h"
#include "compiler/te/ops.h"
#include "cpu_test_util.h"

namespace kiln {
namespace {

using ir::DataType;
using schedule::BufferRegion;
using schedule::create_schedule;
using schedule::IntrinImpl;
using te::Tensor;

// A 4x4x4 GEMM "instruction" written as loops over its regions.
std::shared_ptr<const schedule::TensorIntrin> gemm_intrin() {
  auto a = te::placeholder({4, 4}, DataType::Int(32), "a");
  auto b = te::placeholder({4, 4}, DataType::Int(32), "b");
  auto k = te::reduce_axis(4, "k");
  auto c = te::compute({4, 4}, [&](ir::Var i, ir::Var j) { return te::sum(a(i, k->var) * b(k->var, j), {k}); }, "c");
  return schedule::decl_tensor_intrin("gemm4", c, [](const std::vector<BufferRegion>& in, const BufferRegion& out) {
    ir::Var i("gi"), j("gj"), kk("gk");
    auto loops = [&](ir::Stmt body) {
      return ir::make_for(i, 0, 4, ir::ForKind::Serial, ir::make_for(j, 0, 4, ir::ForKind::Vectorized, body));
    };
    ir::Stmt init = loops(out.store(ir::make_int(0), {i, j}));
    ir::Stmt update = loops(ir::make_for(kk, 0, 4, ir::ForKind::Serial,
                                         out.store(out.load({i, j}) + in[0].load({i, kk}) * in[1].load({kk, j}), {i, j})));
    return IntrinImpl{ir::make_seq({init, update}), init, update};
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

void expect_matches(const schedule::Schedule& s, const std::vector<Tensor>& args) {
  auto f = schedule::lower(s, args, "f");
  for (const char* t : {"llvm -fast-math-contract=0", "llvm -mcpu=haswell"}) {
    SCOPED_TRACE(t);
    EXPECT_TRUE(test::jit_matches_interpreter(f, args, 5, t, true));
  }
}

TEST(CpuTensorize, WholeReductionInside) {
  Matmul mm(16, 4);
  auto s = create_schedule({mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  s[mm.c].tensorize(t[2], gemm_intrin());
  s[mm.c].parallel(t[0]);
  expect_matches(s, mm.args());
}

TEST(CpuTensorize, ReductionSplitAcrossTheBlockWithCachedOperand) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto al = s.cache_read(mm.a, "local", {mm.c});
  auto t = s[mm.c].tile(mm.c->axis[0], mm.c->axis[1], 4, 4);
  auto [ko, ki] = s[mm.c].split(mm.c->reduce_axis[0], 4);
  s[mm.c].reorder({t[0], t[1], ko, t[2], t[3], ki});
  s[al].compute_at(s[mm.c], ko);
  s[mm.c].tensorize(t[2], gemm_intrin());
  expect_matches(s, mm.args());
}

TEST(CpuTensorize, VirtualThreads) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto cl = s.cache_write(mm.c, "local");
  auto [io, ii] = s[mm.c].split(mm.c->axis[0], 8);
  auto [tx, iii] = s[mm.c].split(ii, 4);
  s[mm.c].bind(tx, "vthread");
  s[cl].compute_at(s[mm.c], tx);
  s[mm.c].parallel(io);
  (void)iii;
  expect_matches(s, mm.args());
}

TEST(CpuTensorize, DoubleBuffer) {
  Matmul mm;
  auto s = create_schedule({mm.c});
  auto al = s.cache_read(mm.a, "shared", {mm.c});
  auto [ko, ki] = s[mm.c].split(mm.c->reduce_axis[0], 4);
  s[mm.c].reorder({mm.c->axis[0], ko, mm.c->axis[1], ki});
  s[al].compute_at(s[mm.c], ko);
  s[al].double_buffer();
  expect_matches(s, mm.args());
}

}  // namespace
}  // namespace kiln
