// The CPU backend against the reference interpreter: the same TE programs and
// schedules the compiler tests use (elementwise, matmul, conv2d, pooling, reductions,
// intrinsics, every data type, vectorize/parallel/unroll), compiled with LLVM and run
// through the JIT. With FMA contraction off the results are bit-identical; with it on
// (the default) floats agree within a tolerance.
#include <gtest/gtest.h>

#include <limits>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/schedule.h"
#include "compiler/support/error.h"
#include "compiler/te/ops.h"
#include "cpu_test_util.h"

namespace kiln {
namespace {

using ir::DataType;
using schedule::create_schedule;
using schedule::lower;
using schedule::Schedule;
using te::Tensor;

// Exact: contraction off. Also an AVX2-only CPU model, so the 256-bit paths run too.
const char* const kExactTargets[] = {"llvm -fast-math-contract=0", "llvm -mcpu=haswell -fast-math-contract=0"};

void expect_matches(const Schedule& s, const std::vector<Tensor>& args, uint64_t seed = 1) {
  auto f = lower(s, args, "f");
  for (const char* t : kExactTargets) {
    SCOPED_TRACE(t);
    EXPECT_TRUE(test::jit_matches_interpreter(f, args, seed, t, true));
  }
  SCOPED_TRACE("llvm (contraction on)");
  EXPECT_TRUE(test::jit_matches_interpreter(f, args, seed, "llvm", false, 1e-5));
}

std::vector<DataType> all_types() {
  return {DataType::Int(8),   DataType::Int(16),  DataType::Int(32),  DataType::Int(64),   DataType::UInt(8),
          DataType::UInt(16), DataType::UInt(32), DataType::UInt(64), DataType::Int(3),    DataType::UInt(5),
          DataType::Int(12),  DataType::Float(16), DataType::BFloat16(), DataType::Float(32), DataType::Float(64)};
}

// ---------------------------------------------------------------- elementwise

struct Elementwise {
  Tensor a, b, c;
  Elementwise(DataType t, int n, int m) {
    a = te::placeholder({n, m}, t, "A");
    b = te::placeholder({n, m}, t, "B");
    c = te::compute(
        {n, m},
        [&](ir::Var i, ir::Var j) {
          ir::Expr x = a(i, j), y = b(i, j);
          ir::Expr r = ir::max(x, y) * x - ir::min(x, y) + x * ir::make_const(t, 3);
          if (t.is_float()) {
            r = r + x / ir::make_const(t, 4) + ir::select(x < y, x, y * y);
          } else {
            r = r + x / ir::make_const(t, 2) + x % ir::make_const(t, 3) + ir::select(x < y, x, y * y);
          }
          return r;
        },
        "C");
  }
  std::vector<Tensor> args() const { return {a, b, c}; }
};

class TypedTest : public ::testing::TestWithParam<DataType> {};

TEST_P(TypedTest, ElementwiseUnscheduled) {
  Elementwise e(GetParam(), 7, 13);
  expect_matches(create_schedule({e.c}), e.args());
}

TEST_P(TypedTest, ElementwiseVectorizedParallel) {
  Elementwise e(GetParam(), 9, 64);
  auto s = create_schedule({e.c});
  auto [jo, ji] = s[e.c].split(e.c->axis[1], 16);
  s[e.c].vectorize(ji);
  s[e.c].parallel(e.c->axis[0]);
  (void)jo;
  expect_matches(s, e.args());
}

TEST_P(TypedTest, ElementwiseVectorizedTail) {
  Elementwise e(GetParam(), 5, 21);  // 21 = 2 * 8 + 5: a vector body and a tail
  auto s = create_schedule({e.c});
  auto [jo, ji] = s[e.c].split(e.c->axis[1], 8);
  s[e.c].vectorize(ji);
  s[e.c].unroll(jo);
  expect_matches(s, e.args());
}

TEST_P(TypedTest, CastToEveryType) {
  DataType from = GetParam();
  for (DataType to : all_types()) {
    SCOPED_TRACE(from.to_string() + " -> " + to.to_string());
    auto a = te::placeholder({40}, from, "A");
    auto c = te::cast(a, to);
    auto s = create_schedule({c});
    auto [o, i] = s[c].split(c->axis[0], 8);
    s[c].vectorize(i);
    (void)o;
    expect_matches(s, {a, c});
  }
}

TEST_P(TypedTest, Matmul) {
  DataType t = GetParam();
  auto a = te::placeholder({12, 9}, t, "A");
  auto b = te::placeholder({9, 16}, t, "B");
  auto c = te::matmul(a, b, "C");
  auto s = create_schedule({c});
  auto tile = s[c].tile(c->axis[0], c->axis[1], 4, 8);
  s[c].reorder({tile[0], tile[1], c->reduce_axis[0], tile[2], tile[3]});
  s[c].vectorize(tile[3]);
  s[c].parallel(tile[0]);
  expect_matches(s, {a, b, c});
}

INSTANTIATE_TEST_SUITE_P(AllTypes, TypedTest, ::testing::ValuesIn(all_types()),
                         [](const ::testing::TestParamInfo<DataType>& p) { return p.param.to_string(); });

TEST(Codegen, BoolLogic) {
  auto a = te::placeholder({33}, DataType::Bool(), "A");
  auto b = te::placeholder({33}, DataType::Bool(), "B");
  auto c = te::compute({33}, [&](ir::Var i) { return (a(i) && !b(i)) || ir::eq(a(i), b(i)); }, "C");
  auto s = create_schedule({c});
  auto [o, i] = s[c].split(c->axis[0], 16);
  s[c].vectorize(i);
  (void)o;
  expect_matches(s, {a, b, c});
}

// ---------------------------------------------------------------- intrinsics

TEST(Codegen, FloatIntrinsics) {
  for (DataType t : {DataType::Float(16), DataType::BFloat16(), DataType::Float(32), DataType::Float(64)}) {
    SCOPED_TRACE(t.to_string());
    auto a = te::placeholder({4, 24}, t, "A");
    auto b = te::placeholder({4, 24}, t, "B");
    auto c = te::compute(
        {4, 24},
        [&](ir::Var i, ir::Var j) {
          ir::Expr x = a(i, j), y = b(i, j);
          ir::Expr pos = ir::abs(x) + ir::make_const(t, 0.5);
          return ir::exp(x) + ir::log(pos) + ir::tanh(y) + ir::sigmoid(x) + ir::sqrt(pos) + ir::floor(x * 3) +
                 ir::ceil(y * 3) + ir::round(x * 5) + ir::pow(pos, y) + x % (ir::abs(y) + ir::make_const(t, 0.25));
        },
        "C");
    auto s = create_schedule({c});
    auto [o, i] = s[c].split(c->axis[1], 8);
    s[c].vectorize(i);
    s[c].parallel(c->axis[0]);
    (void)o;
    expect_matches(s, {a, b, c});
  }
}

TEST(Codegen, IntegerIntrinsics) {
  for (DataType t : {DataType::Int(8), DataType::UInt(8), DataType::Int(32), DataType::UInt(32), DataType::Int(64), DataType::Int(5)}) {
    SCOPED_TRACE(t.to_string());
    auto a = te::placeholder({48}, t, "A");
    auto b = te::placeholder({48}, t, "B");
    auto c = te::compute(
        {48},
        [&](ir::Var i) {
          ir::Expr x = a(i), y = b(i);
          return ir::shift_left(x, ir::make_const(t, 2)) + ir::shift_right(x, ir::make_const(t, 1)) +
                 ir::shift_left(y, x) + ir::shift_right(x, y) + ir::bitwise_and(x, y) + ir::bitwise_or(x, y) +
                 ir::bitwise_xor(x, y) + ir::abs(x) + x / ir::select(ir::eq(y, ir::make_const(t, 0)), ir::make_const(t, 3), y) +
                 x % ir::select(ir::eq(y, ir::make_const(t, 0)), ir::make_const(t, 5), y);
        },
        "C");
    auto s = create_schedule({c});
    auto [o, i] = s[c].split(c->axis[0], 16);
    s[c].vectorize(i);
    (void)o;
    expect_matches(s, {a, b, c});
  }
}

TEST(Codegen, DivisionByZeroIsReportedNotCrashed) {
  auto a = te::placeholder({8}, DataType::Int(32), "A");
  auto b = te::placeholder({8}, DataType::Int(32), "B");
  auto c = te::compute({8}, [&](ir::Var i) { return a(i) / b(i); }, "C");
  auto s = create_schedule({c});
  cpu::Module m = cpu::build(s, {a, b, c});
  auto x = cpu::NDArray::zeros({8}, DataType::Int(32));
  auto y = cpu::NDArray::zeros({8}, DataType::Int(32));
  auto z = cpu::NDArray::zeros({8}, DataType::Int(32));
  EXPECT_THROW(m({x, y, z}), cpu::RuntimeError);
  for (int i = 0; i < 8; ++i) y.data_as<int32_t>()[i] = 2;
  x.data_as<int32_t>()[3] = -7;
  m({x, y, z});
  EXPECT_EQ(z.data_as<int32_t>()[3], -4);  // floor division
}

// ---------------------------------------------------------------- ops of the library

TEST(Codegen, MatmulCacheWriteTiled) {
  auto a = te::placeholder({64, 32}, DataType::Float(32), "A");
  auto b = te::placeholder({32, 48}, DataType::Float(32), "B");
  auto c = te::matmul(a, b, "C");
  auto s = create_schedule({c});
  auto cl = s.cache_write(c, "local");
  auto t = s[c].tile(c->axis[0], c->axis[1], 8, 16);
  s[cl].compute_at(s[c], t[1]);
  auto [ko, ki] = s[cl].split(cl->reduce_axis[0], 4);
  s[cl].reorder({ko, ki, cl->axis[0], cl->axis[1]});
  s[cl].unroll(ki);
  s[cl].unroll(cl->axis[0]);
  s[cl].vectorize(cl->axis[1]);
  s[c].vectorize(t[3]);
  s[c].parallel(t[0]);
  expect_matches(s, {a, b, c});
}

TEST(Codegen, DenseWithBias) {
  auto x = te::placeholder({6, 20}, DataType::Float(32), "X");
  auto w = te::placeholder({10, 20}, DataType::Float(32), "W");
  auto bias = te::placeholder({10}, DataType::Float(32), "bias");
  auto y = te::relu(te::dense(x, w, bias, "Y"));
  auto s = create_schedule({y});
  expect_matches(s, {x, w, bias, y});
}

TEST(Codegen, Conv2dScheduled) {
  for (DataType t : {DataType::Float(32), DataType::Int(32), DataType::Float(16)}) {
    SCOPED_TRACE(t.to_string());
    te::Conv2DParams p;
    p.stride = {2, 1};
    p.padding = {1, 1};
    auto x = te::placeholder({1, 4, 9, 10}, t, "X");
    auto w = te::placeholder({8, 4, 3, 3}, t, "W");
    auto y = te::conv2d_nchw(x, w, p, "Y");
    auto s = create_schedule({y});
    auto [wo, wi] = s[y].split(y->axis[3], 4);
    s[y].vectorize(wi);
    s[y].parallel(y->axis[1]);
    (void)wo;
    expect_matches(s, {x, w, y});
  }
}

TEST(Codegen, Conv2dGroupedDilated) {
  te::Conv2DParams p;
  p.padding = {2, 2};
  p.dilation = {2, 2};
  p.groups = 2;
  auto x = te::placeholder({2, 4, 8, 8}, DataType::Float(32), "X");
  auto w = te::placeholder({6, 2, 3, 3}, DataType::Float(32), "W");
  auto y = te::conv2d_nchw(x, w, p, "Y");
  expect_matches(create_schedule({y}), {x, w, y});
}

TEST(Codegen, Pooling) {
  for (auto kind : {te::PoolKind::Max, te::PoolKind::Avg}) {
    te::Pool2DParams p;
    p.kernel = {3, 3};
    p.stride = {2, 2};
    p.padding = {1, 1};
    auto x = te::placeholder({1, 3, 11, 12}, DataType::Float(32), "X");
    auto y = te::pool2d(x, kind, p, "P");
    auto s = create_schedule({y});
    s[y].parallel(y->axis[1]);
    expect_matches(s, {x, y});
  }
}

// A [10, n] input's sum, maximum and minimum over the rows, each reduction split by
// `factor` and its inner axis unrolled or vectorized, against the interpreter.
void expect_row_reductions_match(DataType t, int n, int factor, bool vectorize) {
  SCOPED_TRACE(t.to_string());
  auto a = te::placeholder({10, n}, t, "A");
  auto k = te::reduce_axis(n, "k");
  auto sum = te::compute({10}, [&](ir::Var i) { return te::sum(a(i, k->var), {k}); }, "S");
  auto k2 = te::reduce_axis(n, "k2");
  auto mx = te::compute({10}, [&](ir::Var i) { return te::max_reduce(a(i, k2->var), {k2}); }, "M");
  auto k3 = te::reduce_axis(n, "k3");
  auto mn = te::compute({10}, [&](ir::Var i) { return te::min_reduce(a(i, k3->var), {k3}); }, "N");
  for (const Tensor& out : {sum, mx, mn}) {
    auto s = create_schedule({out});
    auto ki = s[out].split(out->reduce_axis[0], factor).second;
    s[out].parallel(out->axis[0]);
    if (!vectorize) {
      s[out].unroll(ki);
    } else {
      s[out].vectorize(ki);
      std::string body = ir::to_string(lower(s, {a, out}, "f").body);
      EXPECT_NE(body.find("vector_reduce_"), std::string::npos) << body;
    }
    expect_matches(s, {a, out});
  }
}

TEST(Codegen, Reductions) {
  for (DataType t : {DataType::Float(32), DataType::Int(16), DataType::UInt(8), DataType::Float(64)})
    expect_row_reductions_match(t, 37, 8, false);
}

// A reduction's inner axis vectorized: each vector of 16 is combined across its lanes
// as a tree (vector_reduce_*), in the interpreter's order, so the results are exact
// for every type, floats included.
TEST(Codegen, ReductionsAcrossLanes) {
  for (DataType t : all_types()) expect_row_reductions_match(t, 48, 16, true);
}

TEST(Codegen, PadTransposeReshape) {
  auto x = te::placeholder({3, 4, 5}, DataType::Float(32), "X");
  auto p = te::pad(x, {0, 1, 2}, {1, 0, 2}, ir::make_const(DataType::Float(32), 0.5), "P");
  auto t = te::transpose(p, {2, 0, 1}, "T");
  auto r = te::reshape(t, {9, 20}, "R");
  expect_matches(create_schedule({r}), {x, r});
}

TEST(Codegen, InlineAndComputeAt) {
  auto a = te::placeholder({16, 18}, DataType::Int(32), "A");
  auto b = te::compute({16, 18}, [&](ir::Var i, ir::Var j) { return a(i, j) * 3 + 1; }, "B");
  auto c = te::compute({16, 16}, [&](ir::Var i, ir::Var j) { return b(i, j) + b(i, j + 1) * 2 - b(i, j + 2); }, "C");
  auto d = te::compute({16, 16}, [&](ir::Var i, ir::Var j) { return ir::max(c(i, j), 0) + c(i, j) / 3; }, "D");
  auto s = create_schedule({d});
  s[c].compute_inline();
  auto [io, ii] = s[d].split(d->axis[0], 4);
  s[b].compute_at(s[d], io);
  s[d].parallel(io);
  s[d].vectorize(d->axis[1]);
  (void)ii;
  expect_matches(s, {a, d});
}

TEST(Codegen, NestedParallelRunsCorrectly) {
  auto a = te::placeholder({8, 8, 16}, DataType::Float(32), "A");
  auto b = te::compute({8, 8, 16}, [&](ir::Var i, ir::Var j, ir::Var k) { return a(i, j, k) * 2 + 1; }, "B");
  auto s = create_schedule({b});
  s[b].parallel(b->axis[0]);
  s[b].parallel(b->axis[1]);
  s[b].vectorize(b->axis[2]);
  expect_matches(s, {a, b});
}

TEST(Codegen, MultipleFunctionsInOneModule) {
  auto a = te::placeholder({32}, DataType::Float(32), "A");
  auto b = te::compute({32}, [&](ir::Var i) { return a(i) * 2; }, "B");
  auto c = te::compute({32}, [&](ir::Var i) { return a(i) + 1; }, "C");
  auto fb = lower(create_schedule({b}), {a, b}, "twice");
  auto fc = lower(create_schedule({c}), {a, c}, "plus_one");
  cpu::Module m = cpu::build({fb, fc});
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"twice", "plus_one"}));
  auto x = cpu::NDArray::empty({32}, DataType::Float(32));
  for (int i = 0; i < 32; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  auto y = cpu::NDArray::zeros({32}, DataType::Float(32));
  auto z = cpu::NDArray::zeros({32}, DataType::Float(32));
  m.call("twice", {x, y});
  m.call("plus_one", {x, z});
  EXPECT_EQ(y.data_as<float>()[5], 10.0f);
  EXPECT_EQ(z.data_as<float>()[5], 6.0f);
  // Typed entry point, as a C caller sees it.
  auto fn = reinterpret_cast<int32_t (*)(float*, float*)>(m.function_pointer("twice"));
  EXPECT_EQ(fn(x.data_as<float>(), z.data_as<float>()), 0);
  EXPECT_EQ(z.data_as<float>()[7], 14.0f);
}

TEST(Codegen, BadArgumentsAreReported) {
  auto a = te::placeholder({4, 4}, DataType::Float(32), "A");
  auto b = te::compute({4, 4}, [&](ir::Var i, ir::Var j) { return a(i, j) + 1; }, "B");
  cpu::Module m = cpu::build(create_schedule({b}), {a, b});
  auto x = cpu::NDArray::zeros({4, 4}, DataType::Float(32));
  EXPECT_THROW(m({x}), cpu::RuntimeError);
  EXPECT_THROW(m({x, cpu::NDArray::zeros({4, 5}, DataType::Float(32))}), cpu::RuntimeError);
  EXPECT_THROW(m({x, cpu::NDArray::zeros({4, 4}, DataType::Int(32))}), cpu::RuntimeError);
  EXPECT_THROW(m({x, x}), cpu::RuntimeError);  // overlapping
  EXPECT_THROW(cpu::build(create_schedule({b}), {a, b}, "llvm -mcpu=no-such-cpu -mtriple=aarch64-linux-gnu"), CompileError);
}

TEST(Codegen, NumCoresSetsTheTaskCount) {
  auto a = te::placeholder({64}, DataType::Float(32), "A");
  auto b = te::compute({64}, [&](ir::Var i) { return a(i) + 1; }, "B");
  auto s = create_schedule({b});
  s[b].parallel(b->axis[0]);
  auto f = lower(s, {a, b}, "f");
  std::string fixed = cpu::build({f}, "llvm -num-cores=3").llvm_ir();
  EXPECT_NE(fixed.find("@kiln_parallel_launch(ptr nonnull @f_parallel_0, ptr nonnull %closure, i32 3)"), std::string::npos) << fixed;
  std::string pool = cpu::build({f}, "llvm").llvm_ir();
  EXPECT_NE(pool.find("@kiln_parallel_launch(ptr nonnull @f_parallel_0, ptr nonnull %closure, i32 0)"), std::string::npos) << pool;
  EXPECT_TRUE(test::jit_matches_interpreter(f, {a, b}, 1, "llvm -num-cores=3", true));
}

// A value's int32 arithmetic wraps as in the interpreter (only index arithmetic, which
// is in bounds, is emitted with nsw).
TEST(Codegen, IntegerValuesWrap) {
  auto x = te::placeholder({4}, DataType::Int(32), "X");
  auto y = te::compute({4}, [&](ir::Var i) { return x(i) * 3 + x(i); }, "Y");
  cpu::Module m = cpu::build(create_schedule({y}), {x, y});
  EXPECT_EQ(m.llvm_ir().find(" nsw "), std::string::npos) << m.llvm_ir();
  auto in = cpu::NDArray::zeros({4}, DataType::Int(32));
  auto out = cpu::NDArray::zeros({4}, DataType::Int(32));
  const int32_t big[4] = {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 1 << 30, -7};
  for (int i = 0; i < 4; ++i) in.data_as<int32_t>()[i] = big[i];
  m({in, out});
  for (int i = 0; i < 4; ++i) {
    uint32_t wrapped = static_cast<uint32_t>(big[i]) * 4u;
    EXPECT_EQ(out.data_as<int32_t>()[i], static_cast<int32_t>(wrapped)) << big[i];
  }
}

TEST(Codegen, VectorInstructionsFollowTheTarget) {
  auto a = te::placeholder({1024}, DataType::Float(32), "A");
  auto b = te::compute({1024}, [&](ir::Var i) { return a(i) * 2 + 1; }, "B");
  auto s = create_schedule({b});
  auto [o, i] = s[b].split(b->axis[0], 16);
  s[b].vectorize(i);
  (void)o;
  auto f = lower(s, {a, b});
  std::string ir = cpu::build({f}, "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512").llvm_ir();
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos) << ir;
  std::string asm512 = cpu::build({f}, "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512").assembly();
  EXPECT_NE(asm512.find("zmm"), std::string::npos);
  std::string asm256 = cpu::build({f}, "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell").assembly();
  EXPECT_EQ(asm256.find("zmm"), std::string::npos);
  EXPECT_NE(asm256.find("ymm"), std::string::npos);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Intrinsics the interpreter does not know (erf, fma, min, max calls), checked
// against the C library.
TEST(Codegen, ExtraFloatIntrinsics) {
  auto a = te::placeholder({64}, DataType::Float(32), "A");
  auto b = te::placeholder({64}, DataType::Float(32), "B");
  DataType f = DataType::Float(32);
  auto c = te::compute({64}, [&](ir::Var i) { return ir::make_call(f, "erf", {a(i)}); }, "C");
  auto d = te::compute({64}, [&](ir::Var i) { return ir::make_call(f, "fma", {a(i), b(i), a(i)}); }, "D");
  auto e = te::compute({64}, [&](ir::Var i) { return ir::make_call(f, "min", {a(i), b(i)}) + ir::make_call(f, "max", {a(i), b(i)}); }, "E");
  auto s = create_schedule({c, d, e});
  for (const Tensor& t : {c, d, e}) {
    auto [o, i] = s[t].split(t->axis[0], 16);
    s[t].vectorize(i);
    (void)o;
  }
  cpu::Module m = cpu::build(s, {a, b, c, d, e});
  auto x = cpu::NDArray::empty({64}, f), y = cpu::NDArray::empty({64}, f);
  for (int i = 0; i < 64; ++i) {
    x.data_as<float>()[i] = static_cast<float>(i - 32) / 9.0f;
    y.data_as<float>()[i] = static_cast<float>(i % 7) * 0.3f - 1.0f;
  }
  auto oc = cpu::NDArray::zeros({64}, f), od = cpu::NDArray::zeros({64}, f), oe = cpu::NDArray::zeros({64}, f);
  m({x, y, oc, od, oe});
  for (int i = 0; i < 64; ++i) {
    float xv = x.data_as<float>()[i], yv = y.data_as<float>()[i];
    EXPECT_EQ(oc.data_as<float>()[i], static_cast<float>(std::erf(static_cast<double>(xv))));
    EXPECT_EQ(od.data_as<float>()[i], std::fma(xv, yv, xv));
    EXPECT_EQ(oe.data_as<float>()[i], std::min(xv, yv) + std::max(xv, yv));
  }
  EXPECT_THROW(cpu::build(create_schedule({te::compute({4}, [&](ir::Var i) { return ir::make_call(f, "no_such_fn", {a(i)}); }, "Z")}),
                          {a, c}),
               CompileError);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// -vector-libm=1: float vector transcendentals through glibc's libmvec, for AVX-512
// (16 lanes, on a host that has it), AVX2 (8) and lane counts that are not a multiple of the native width.
TEST(Codegen, VectorLibm) {
  for (int lanes : {16, 8, 20, 4}) {
    for (const char* target : {"llvm -vector-libm=1", "llvm -mcpu=haswell -vector-libm=1"}) {
      SCOPED_TRACE(std::string(target) + " lanes " + std::to_string(lanes));
      auto a = te::placeholder({3, 40}, DataType::Float(32), "A");
      auto c = te::compute(
          {3, 40},
          [&](ir::Var i, ir::Var j) {
            ir::Expr x = a(i, j);
            ir::Expr pos = ir::abs(x) + 0.5f;
            return ir::exp(x) + ir::log(pos) + ir::tanh(x) + ir::sigmoid(x) + ir::pow(pos, x) +
                   ir::make_call(DataType::Float(32), "erf", {x});
          },
          "C");
      auto s = create_schedule({c});
      auto [o, in] = s[c].split(c->axis[1], lanes);
      s[c].vectorize(in);
      (void)o;
      auto f = lower(s, {a, c}, "f");
      cpu::Module m = cpu::build({f}, target);
      std::string ir = m.llvm_ir();
      // Plain "llvm" compiles for this machine: AVX-512 where it has it, else AVX2.
      bool avx512 = std::string(target).find("haswell") == std::string::npos && __builtin_cpu_supports("avx512f");
      EXPECT_NE(ir.find(avx512 ? "_ZGVeN16v_expf" : "_ZGVdN8v_expf"), std::string::npos);
      EXPECT_NE(ir.find(avx512 ? "_ZGVeN16vv_powf" : "_ZGVdN8vv_powf"), std::string::npos);
      // erf is not in the interpreter: compare the rest of the sum against it with erf
      // added by the C library.
      auto x = cpu::NDArray::empty({3, 40}, DataType::Float(32));
      for (int i = 0; i < 120; ++i) x.data_as<float>()[i] = static_cast<float>(i % 23 - 11) / 7.0f;
      auto y = cpu::NDArray::zeros({3, 40}, DataType::Float(32));
      m({x, y});
      for (int i = 0; i < 120; ++i) {
        double v = x.data_as<float>()[i], p = std::fabs(v) + 0.5;
        double want = std::exp(v) + std::log(p) + std::tanh(v) + 1 / (1 + std::exp(-v)) + std::pow(p, v) + std::erf(v);
        EXPECT_NEAR(y.data_as<float>()[i], want, 1e-5 * (1 + std::fabs(want))) << i;
      }
    }
  }
  EXPECT_THROW(cpu::Target::parse("llvm -mtriple=aarch64-linux-gnu -vector-libm=1"), CompileError);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The trigonometric and hyperbolic intrinsics on 16 lanes, float32 and float64, through
// libm per lane and (float32, -vector-libm=1) through libmvec, against the C library.
TEST(Codegen, TrigonometricIntrinsics) {
  using Fn = ir::Expr (*)(ir::Expr);
  using Ref = double (*)(double);
  struct Case {
    const char* name;
    Fn f;
    Ref ref;
    double lo, hi;  // the domain sampled
  };
  const Case cases[] = {{"sin", ir::sin, [](double v) { return std::sin(v); }, -4, 4},
                        {"cos", ir::cos, [](double v) { return std::cos(v); }, -4, 4},
                        {"tan", ir::tan, [](double v) { return std::tan(v); }, -1.2, 1.2},
                        {"asin", ir::asin, [](double v) { return std::asin(v); }, -0.99, 0.99},
                        {"acos", ir::acos, [](double v) { return std::acos(v); }, -0.99, 0.99},
                        {"atan", ir::atan, [](double v) { return std::atan(v); }, -8, 8},
                        {"sinh", ir::sinh, [](double v) { return std::sinh(v); }, -3, 3},
                        {"cosh", ir::cosh, [](double v) { return std::cosh(v); }, -3, 3},
                        {"asinh", ir::asinh, [](double v) { return std::asinh(v); }, -8, 8},
                        {"acosh", ir::acosh, [](double v) { return std::acosh(v); }, 1, 9},
                        {"atanh", ir::atanh, [](double v) { return std::atanh(v); }, -0.99, 0.99}};
  for (DataType t : {DataType::Float(32), DataType::Float(64)}) {
    for (const char* target : {"llvm", "llvm -vector-libm=1"}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.name) + " " + t.to_string() + " " + target);
        auto a = te::placeholder({48}, t, "A");
        auto y = te::compute({48}, [&](ir::Var i) { return c.f(a(i)); }, "Y");
        auto s = create_schedule({y});
        auto [o, in] = s[y].split(y->axis[0], 16);
        s[y].vectorize(in);
        (void)o;
        cpu::Module m = cpu::build({lower(s, {a, y}, "f")}, target);
        auto x = cpu::NDArray::empty({48}, t), out = cpu::NDArray::zeros({48}, t);
        std::vector<double> xs;
        for (int i = 0; i < 48; ++i) {
          double v = c.lo + (c.hi - c.lo) * i / 47.0;
          if (t.bits() == 32) x.data_as<float>()[i] = static_cast<float>(v), xs.push_back(static_cast<float>(v));
          else x.data_as<double>()[i] = v, xs.push_back(v);
        }
        m({x, out});
        bool vec = t.bits() == 32 && std::string(target).find("vector-libm") != std::string::npos;
        for (int i = 0; i < 48; ++i) {
          double want = c.ref(xs[i]);
          if (t.bits() == 64) {
            EXPECT_EQ(out.data_as<double>()[i], want) << xs[i];
          } else if (!vec) {
            EXPECT_EQ(out.data_as<float>()[i], static_cast<float>(want)) << xs[i];  // rounded once from double
          } else {
            EXPECT_NEAR(out.data_as<float>()[i], want, 1e-6 * (1 + std::fabs(want))) << xs[i];
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln
