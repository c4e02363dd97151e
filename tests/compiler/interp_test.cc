// The interpreter on every data type, vectors, and faults.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/op.h"
#include "compiler/te/ops.h"
#include "test_util.h"

namespace kiln {
namespace {

using ir::DataType;

// out[i] = f(a[i], b[i]) for one type, through the whole lowering.
interp::HostBuffer apply(DataType t, const std::function<ir::Expr(ir::Expr, ir::Expr)>& f, const std::vector<double>& a,
                         const std::vector<double>& b, DataType out_type = DataType()) {
  int n = static_cast<int>(a.size());
  auto A = te::placeholder({n}, t, "A");
  auto B = te::placeholder({n}, t, "B");
  auto C = te::compute({n}, [&](ir::Var i) { return f(A(i), B(i)); }, "C");
  auto s = schedule::create_schedule({C});
  auto fn = schedule::lower(s, {A, B, C});
  interp::HostBuffer ha(t, {n}), hb(t, {n}), hc(C->dtype, {n});
  for (int i = 0; i < n; ++i) {
    ha.set(i, a[i]);
    hb.set(i, b[i]);
  }
  interp::run(fn, {&ha, &hb, &hc});
  (void)out_type;
  return hc;
}

TEST(Interp, IntegersWrapAtTheirWidth) {
  auto c = apply(DataType::Int(8), [](auto x, auto y) { return x + y; }, {100, -100, 5}, {100, -100, 6});
  EXPECT_EQ(c.get_int(0), -56);
  EXPECT_EQ(c.get_int(1), 56);
  EXPECT_EQ(c.get_int(2), 11);
  auto d = apply(DataType::UInt(8), [](auto x, auto y) { return x - y; }, {1, 200}, {2, 100});
  EXPECT_EQ(d.get_int(0), 255);
  EXPECT_EQ(d.get_int(1), 100);
  auto e = apply(DataType::Int(3), [](auto x, auto y) { return x * y; }, {3, -2}, {3, 2});
  EXPECT_EQ(e.get_int(0), 1);  // 9 wraps to 1 in 3 bits
  EXPECT_EQ(e.get_int(1), -4);
  auto f = apply(DataType::Int(64), [](auto x, auto y) { return x * y; }, {3e9}, {3});
  EXPECT_EQ(f.get_int(0), 9000000000LL);
  auto g = apply(DataType::UInt(17), [](auto x, auto y) { return x + y; }, {131071}, {2});
  EXPECT_EQ(g.get_int(0), 1);
}

TEST(Interp, FloorDivisionAndModulo) {
  auto q = apply(DataType::Int(32), [](auto x, auto y) { return x / y; }, {7, -7, 7, -7}, {2, 2, -2, -2});
  EXPECT_EQ(q.get_int(0), 3);
  EXPECT_EQ(q.get_int(1), -4);
  EXPECT_EQ(q.get_int(2), -4);
  EXPECT_EQ(q.get_int(3), 3);
  auto r = apply(DataType::Int(32), [](auto x, auto y) { return x % y; }, {7, -7, 7}, {3, 3, -3});
  EXPECT_EQ(r.get_int(0), 1);
  EXPECT_EQ(r.get_int(1), 2);
  EXPECT_EQ(r.get_int(2), -2);
  EXPECT_THROW(apply(DataType::Int(32), [](auto x, auto y) { return x / y; }, {1}, {0}), interp::InterpError);
}

TEST(Interp, FloatTypesRoundAfterEachOperation) {
  double tiny = 1.0 / 4096;
  auto h = apply(DataType::Float(16), [](auto x, auto y) { return x + y; }, {1.0}, {tiny});
  EXPECT_EQ(h.get(0), 1.0);
  auto bf = apply(DataType::BFloat16(), [](auto x, auto y) { return x + y; }, {1.0}, {1.0 / 512});
  EXPECT_EQ(bf.get(0), 1.0);
  auto f32 = apply(DataType::Float(32), [](auto x, auto y) { return x + y; }, {1.0}, {tiny});
  EXPECT_EQ(f32.get(0), 1.0 + tiny);
  auto f64 = apply(DataType::Float(64), [](auto x, auto y) { return x / y; }, {1.0}, {3.0});
  EXPECT_EQ(f64.get(0), 1.0 / 3.0);
  auto f32div = apply(DataType::Float(32), [](auto x, auto y) { return x / y; }, {1.0}, {3.0});
  EXPECT_EQ(f32div.get(0), static_cast<double>(1.0f / 3.0f));
}

TEST(Interp, CastsBoolsSelectsAndIntrinsics) {
  auto c = apply(DataType::Float(32), [](auto x, auto y) { return ir::cast(DataType::Int(8), x + y); }, {3.9, -3.9, 300.0}, {0, 0, 0});
  EXPECT_EQ(c.get_int(0), 3);
  EXPECT_EQ(c.get_int(1), -3);
  EXPECT_EQ(c.get_int(2), 44);  // 300 wraps in 8 bits
  auto b = apply(DataType::Int(32), [](auto x, auto y) { return ir::cast(DataType::Int(32), x < y && y < 10); }, {1, 5, 1}, {2, 2, 20});
  EXPECT_EQ(b.get_int(0), 1);
  EXPECT_EQ(b.get_int(1), 0);
  EXPECT_EQ(b.get_int(2), 0);
  auto s = apply(DataType::Float(64), [](auto x, auto y) { return ir::select(x > y, ir::exp(x), ir::sqrt(y)); }, {1.0, 0.0}, {0.0, 4.0});
  EXPECT_DOUBLE_EQ(s.get(0), std::exp(1.0));
  EXPECT_EQ(s.get(1), 2.0);
  auto sh = apply(DataType::Int(16), [](auto x, auto y) { return ir::shift_right(x, y) + ir::bitwise_and(x, y); }, {-16, 12}, {2, 4});
  EXPECT_EQ(sh.get_int(0), -4 + (-16 & 2));
  EXPECT_EQ(sh.get_int(1), (12 >> 4) + (12 & 4));
}

TEST(Interp, VectorsAndLets) {
  ir::Var a("a", DataType::Handle()), i("i"), v("v", DataType::Int(32, 4));
  schedule::LoweredFunc f;
  ir::Buffer buf("a", DataType::Int(16), {8});
  f.args = {buf};
  ir::Var data = buf->data;
  f.body = ir::make_let_stmt(v, ir::make_ramp(10, 2, 4),
                             ir::make_seq({ir::make_store(data, ir::make_cast(DataType::Int(16, 4), v), ir::make_ramp(0, 1, 4)),
                                           ir::make_store(data, ir::make_broadcast(ir::make_int(-1, DataType::Int(16)), 4),
                                                          ir::make_ramp(4, 1, 4))}));
  interp::HostBuffer h(DataType::Int(16), {8});
  interp::run(f, {&h});
  EXPECT_EQ(h.get_int(0), 10);
  EXPECT_EQ(h.get_int(3), 16);
  EXPECT_EQ(h.get_int(7), -1);
}

TEST(Interp, HostBuffersAreZeroUnlessUninitializedLargeOnesOnHugePageBounds) {
  // Small and large (4 MiB and more: 2 MiB aligned, for transparent huge pages), made
  // zero; copies equal; an uninitialized one is as large and takes what is written.
  for (int64_t n : {int64_t{1000}, int64_t{3} << 20}) {
    {
      // Memory the allocator may hand out again, left non-zero.
      interp::HostBuffer dirty(DataType::Float(32), {n}, interp::HostBuffer::Uninitialized{});
      std::memset(dirty.data(), 0xff, static_cast<size_t>(n) * 4);
    }
    interp::HostBuffer z(DataType::Float(32), {n});
    bool zero = true;
    for (int64_t i = 0; i < n; ++i) zero = zero && z.data()[i * 4] == 0 && z.get(i) == 0.0;
    EXPECT_TRUE(zero) << n;
    z.set(n - 1, 2.5);
    interp::HostBuffer copy = z;
    EXPECT_TRUE(copy.bit_equal(z));
    EXPECT_EQ(copy.get(n - 1), 2.5);
    interp::HostBuffer u(DataType::Float(32), {n}, interp::HostBuffer::Uninitialized{});
    EXPECT_EQ(u.size(), n);
    std::memcpy(u.data(), z.data(), static_cast<size_t>(n) * 4);
    EXPECT_TRUE(u.bit_equal(z));
    if (n * 4 >= (int64_t{4} << 20)) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(u.data()) % (uintptr_t{2} << 20), 0u);
    }
  }
}

TEST(Interp, OutOfBoundsAndBadArgumentsAreErrors) {
  schedule::LoweredFunc f;
  ir::Buffer buf("a", DataType::Float(32), {4});
  f.args = {buf};
  f.body = ir::make_store(buf->data, ir::make_float(1.0), 4);
  interp::HostBuffer h(DataType::Float(32), {4});
  try {
    interp::run(f, {&h});
    FAIL() << "no error";
  } catch (const interp::InterpError& e) {
    EXPECT_NE(std::string(e.what()).find("out-of-bounds store to 'a' at index 4 (size 4)"), std::string::npos) << e.what();
  }
  interp::HostBuffer wrong(DataType::Float(64), {4});
  EXPECT_THROW(interp::run(f, {&wrong}), interp::InterpError);
  interp::HostBuffer shape(DataType::Float(32), {5});
  EXPECT_THROW(interp::run(f, {&shape}), interp::InterpError);
  EXPECT_THROW(interp::run(f, {}), interp::InterpError);
}

TEST(Interp, ProgramRunsRepeatedly) {
  auto A = te::placeholder({4}, DataType::Int(32), "A");
  auto B = te::compute({4}, [&](ir::Var i) { return A(i) * 3; }, "B");
  auto fn = schedule::lower(schedule::create_schedule({B}), {A, B});
  interp::Program p(fn);
  for (int round = 0; round < 3; ++round) {
    interp::HostBuffer a(DataType::Int(32), {4}), b(DataType::Int(32), {4});
    a.fill(round);
    p.run({&a, &b});
    EXPECT_EQ(b.get_int(2), 3 * round);
  }
}

}  // namespace
}  // namespace kiln
