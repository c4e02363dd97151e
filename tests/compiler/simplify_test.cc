// The analyzer and simplifier: folding, canonical forms, div/mod rules, bounds and
// the proofs lowering relies on.
#include <gtest/gtest.h>

#include "compiler/ir/analyzer.h"
#include "compiler/ir/int_set.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace kiln::ir {
namespace {

class Simplify : public ::testing::Test {
 protected:
  std::string s(const Expr& e) { return to_string(an.simplify(e)); }
  Analyzer an;
  Var x{"x"}, y{"y"}, z{"z"};
};

TEST_F(Simplify, ConstantFolding) {
  EXPECT_EQ(s(Expr(3) * 4 + 2), "14");
  EXPECT_EQ(s(make_float(1.5) * make_float(2.0)), "3.0f");
  EXPECT_EQ(s(make_cast(DataType::Int(8), make_int(300))), "int8(44)");
  EXPECT_EQ(s(make_cast(DataType::Float(32), make_int(3))), "3.0f");
  EXPECT_EQ(s(make_cast(DataType::Int(32), make_float(-2.7))), "-2");
  EXPECT_EQ(s(make_binary(NodeKind::Add, make_int(127, DataType::Int(8)), make_int(1, DataType::Int(8)))), "int8(-128)");
  EXPECT_EQ(s(make_binary(NodeKind::LT, make_int(3), make_int(4))), "true");
  EXPECT_EQ(s(make_binary(NodeKind::Min, make_int(3), make_int(4))), "3");
}

// A power by an immediate 2 or 1 (a graph constant made an immediate by lowering) is a
// product or the base, scalar or vector; other exponents stay a call.
TEST_F(Simplify, PowersByImmediates) {
  Var f{"f", DataType::Float(32)};
  EXPECT_EQ(s(pow(f, make_float(2.0))), "f*f");
  EXPECT_EQ(s(pow(f, make_float(1.0))), "f");
  EXPECT_EQ(s(pow(f, make_float(0.5))), "sqrt(f)");
  EXPECT_EQ(s(pow(make_broadcast(f, 4), make_broadcast(make_float(2.0), 4))), to_string(an.simplify(make_broadcast(f, 4) * make_broadcast(f, 4))));
  EXPECT_NE(s(pow(f, make_float(3.0))).find("pow("), std::string::npos);
}

TEST_F(Simplify, LinearForms) {
  EXPECT_EQ(s(x - x), "0");
  EXPECT_EQ(s((x + 3) - x), "3");
  EXPECT_EQ(s(x * 2 + y + x * 3 - y), "x*5");
  EXPECT_EQ(s((x + 1) * 4 - 4), "x*4");
  EXPECT_EQ(s(x + y - (y + x)), "0");
  EXPECT_EQ(s(Expr(0) - x + 2 * x), "x");
  EXPECT_EQ(s(x * 1 + 0), "x");
  EXPECT_EQ(s(x * 0 + y), "y");
}

TEST_F(Simplify, DivMod) {
  EXPECT_EQ(s((x * 8 + 4) / 8), "x");
  EXPECT_EQ(s((x * 8 + y) / 8), "x + y/8");  // nothing known about y: only the multiple of 8 moves out
  EXPECT_EQ(s((x * 8 + y) % 8), "y % 8");
  EXPECT_EQ(s((x * 9 + y) % 4), "(x + y) % 4");
  an.bind(x, 0, 100);
  an.bind(y, 0, 7);
  EXPECT_EQ(s((x * 8 + y) / 8), "x");
  EXPECT_EQ(s((x * 8 + y) % 8), "y");
  EXPECT_EQ(s((x * 8 + 12) / 4), "x*2 + 3");
  EXPECT_EQ(s((x * 6) % 4), "x % 2*2");
  EXPECT_EQ(s(x / 4 / 8), "x/32");
  EXPECT_EQ(s(x % 16 % 4), "x % 4");
  EXPECT_EQ(s(x / 8 * 8 + x % 8), "x");
  EXPECT_EQ(s(y / 8), "0");
  EXPECT_EQ(s(y % 8), "y");
  EXPECT_EQ(s(Expr(-7) / 2), "-4");
  EXPECT_EQ(s(Expr(-7) % 2), "1");
  // fused then split back: (i*ej + j) / ej == i and % ej == j
  Var i("i"), j("j");
  an.bind(i, 0, 5);
  an.bind(j, 0, 9);
  Expr fused = i * 10 + j;
  EXPECT_EQ(s(fused / 10), "i");
  EXPECT_EQ(s(fused % 10), "j");
}

TEST_F(Simplify, MinMaxAndComparisons) {
  EXPECT_EQ(s(min(x + 3, x + 5)), "x + 3");
  EXPECT_EQ(s(max(x + 3, x + 5)), "x + 5");
  EXPECT_EQ(s(min(x, x)), "x");
  EXPECT_EQ(s(min(min(x, 4), 2)), "min(x, 2)");
  an.bind(x, 0, 9);
  EXPECT_EQ(s(x < 10), "true");
  EXPECT_EQ(s(x < 9), "x < 9");
  EXPECT_EQ(s(x >= 0), "true");
  EXPECT_EQ(s(eq(x, 12)), "false");
  EXPECT_EQ(s(min(x, 20)), "x");
  EXPECT_EQ(s(max(x, -1)), "x");
  EXPECT_EQ(s(x + 1 <= x), "false");
}

TEST_F(Simplify, Logic) {
  Expr c = x < y;
  EXPECT_EQ(s(c && make_bool(true)), "x < y");
  EXPECT_EQ(s(c && make_bool(false)), "false");
  EXPECT_EQ(s(c || make_bool(true)), "true");
  EXPECT_EQ(s(!(x < y)), "x >= y");
  EXPECT_EQ(s(make_not(make_not(c))), "x < y");
  EXPECT_EQ(s(make_select(make_bool(true), x, y)), "x");
  EXPECT_EQ(s(make_select(c, x + 1, 1 + x)), "x + 1");
  EXPECT_EQ(s(likely(make_bool(true))), "true");
}

TEST_F(Simplify, Vectors) {
  EXPECT_EQ(s(make_ramp(x, 1, 4) + make_broadcast(y * 4, 4)), "ramp(x + y*4, 1, 4)");
  EXPECT_EQ(s(make_ramp(x, 1, 4) * make_broadcast(2, 4)), "ramp(x*2, 2, 4)");
  EXPECT_EQ(s(make_broadcast(x, 4) + make_broadcast(1, 4)), "broadcast(x + 1, 4)");
  EXPECT_EQ(s(make_ramp(x, 0, 4)), "broadcast(x, 4)");
  // lanes in one block of the divisor: a broadcast quotient, a ramp remainder
  EXPECT_EQ(s(make_ramp(x * 16, 1, 16) / make_broadcast(64, 16)), "broadcast(x/4, 16)");
  EXPECT_EQ(s(make_ramp(x * 16, 1, 16) % make_broadcast(64, 16)), "ramp(x % 4*16, 1, 16)");
  EXPECT_EQ(s(make_ramp(x * 8 + 3, 2, 2) / make_broadcast(8, 2)), "broadcast(x, 2)");
  // lanes that may cross a block boundary stay as they are
  EXPECT_EQ(s(make_ramp(x * 16 + 8, 1, 16) / make_broadcast(64, 16)), "ramp(x*16 + 8, 1, 16)/broadcast(64, 16)");
  EXPECT_EQ(s(make_ramp(x * 8, 1, 16) % make_broadcast(64, 16)), "ramp(x*8, 1, 16) % broadcast(64, 16)");
}

TEST_F(Simplify, VectorsInOneBlockByBounds) {
  an.bind(x, 0, 3);
  EXPECT_EQ(s(make_ramp(x, 1, 4) / make_broadcast(8, 4)), "broadcast(0, 4)");
  EXPECT_EQ(s(make_ramp(x, 1, 4) % make_broadcast(8, 4)), "ramp(x, 1, 4)");
  EXPECT_EQ(s(make_ramp(x, 1, 8) / make_broadcast(8, 8)), "ramp(x, 1, 8)/broadcast(8, 8)");
}

TEST_F(Simplify, Lets) {
  EXPECT_EQ(s(make_let(z, make_int(3), z + x)), "x + 3");
  EXPECT_EQ(s(make_let(z, x * y, x)), "x");
}

TEST_F(Simplify, Bounds) {
  an.bind(x, 0, 15);
  an.bind(y, -4, 4);
  ConstBound b = an.const_bound(x * 4 + y);
  EXPECT_EQ(b.min, -4);
  EXPECT_EQ(b.max, 64);
  b = an.const_bound(x % 4);
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 3);
  b = an.const_bound(min(x, 8) - max(y, 0));
  EXPECT_EQ(b.min, -4);
  EXPECT_EQ(b.max, 8);
  b = an.const_bound(x / 4);
  EXPECT_EQ(b.max, 3);
  b = an.const_bound(z);
  EXPECT_EQ(b.min, DataType::Int(32).min_int());
}

TEST_F(Simplify, ProofsLoweringNeeds) {
  Var io("io"), ii("ii");
  an.bind(io, 0, 24);
  an.bind(ii, 0, 3);
  // a split of an extent of 100 by 4 divides evenly; by 8 it does not
  EXPECT_TRUE(an.can_prove_divisible(make_int(100), 4));
  EXPECT_FALSE(an.can_prove_divisible(make_int(100), 8));
  EXPECT_TRUE(an.can_prove_divisible(io * 8 + 16, 8));
  EXPECT_FALSE(an.can_prove_divisible(io * 8 + ii, 8));
  // the access io*4 + ii stays inside [0, 100)
  EXPECT_TRUE(an.can_prove(io * 4 + ii < 100));
  EXPECT_TRUE(an.can_prove(io * 4 + ii >= 0));
  EXPECT_FALSE(an.can_prove(io * 4 + ii < 99));
  EXPECT_TRUE(an.can_prove_equal((io * 4 + ii) / 4, io));
}

TEST_F(Simplify, IntSets) {
  Var i("i"), j("j");
  IntSetMap dom{{j.get(), IntSet::interval(0, 7)}};
  IntSet set = eval_int_set(i * 8 + j, dom, &an);
  EXPECT_EQ(to_string(set.min), "i*8");
  EXPECT_EQ(to_string(set.max), "i*8 + 7");
  set = eval_int_set(j * 2 - 1, dom, &an);
  EXPECT_EQ(to_string(set.min), "-1");
  EXPECT_EQ(to_string(set.max), "13");
  set = eval_int_set((i * 8 + j) % 8, dom, &an);
  EXPECT_EQ(to_string(set.min), "0");
  EXPECT_EQ(to_string(set.max), "7");
  set = eval_int_set(j * j, dom, &an);
  EXPECT_EQ(to_string(set.max), "49");
  set = eval_int_set(make_call(DataType::Int(32), "exp", {j}), dom, &an);
  EXPECT_FALSE(set.bounded());
}

TEST_F(Simplify, StatementsDropDeadBranchesAndUnitLoops) {
  Var i("i");
  Var buf("A", DataType::Handle());
  Stmt s = make_for(i, 0, 1, ForKind::Serial, make_if(i < 5, make_store(buf, make_int(1), i + 2), make_store(buf, make_int(0), i)));
  EXPECT_EQ(to_string(an.simplify(s)), "A[2] = 1\n");
  Stmt t = make_for(i, 0, 8, ForKind::Serial, make_if(i < 8, make_store(buf, make_int(1), i)));
  EXPECT_EQ(to_string(an.simplify(t)), "for (i, 0, 8) {\n  A[i] = 1\n}\n");
}

}  // namespace
}  // namespace kiln::ir
