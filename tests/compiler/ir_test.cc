// IR nodes: types, construction, printing, structural equality and hashing, the
// visitor and the mutator.
#include <gtest/gtest.h>

#include <cmath>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/ir/parse_type.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/support/error.h"

namespace kiln::ir {
namespace {

TEST(Type, ParseIsTheInverseOfToString) {
  for (DataType t : {DataType::Int(32), DataType::UInt(8, 16), DataType::Float(16), DataType::BFloat16(),
                     DataType::Bool(), DataType::Bool(8), DataType::Int(3), DataType::Float(64, 4), DataType::Handle()})
    EXPECT_EQ(parse_type(t.to_string()), t) << t.to_string();
  for (const char* bad : {"", "float33", "int", "intx4", "uint8x", "float32x0", "x8", "handlex2", "int99999"}) {
    try {
      parse_type(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("data type"), std::string::npos) << e.what();
    }
  }
}

TEST(Type, NamesAndWidths) {
  EXPECT_EQ(DataType::Int(32).to_string(), "int32");
  EXPECT_EQ(DataType::UInt(8, 16).to_string(), "uint8x16");
  EXPECT_EQ(DataType::Float(16).to_string(), "float16");
  EXPECT_EQ(DataType::BFloat16().to_string(), "bfloat16");
  EXPECT_EQ(DataType::Bool().to_string(), "bool");
  EXPECT_EQ(DataType::Int(3).storage_bytes(), 1);
  EXPECT_EQ(DataType::Int(24).storage_bytes(), 4);
  EXPECT_EQ(DataType::UInt(64).storage_bytes(), 8);
  EXPECT_EQ(DataType::Int(4).min_int(), -8);
  EXPECT_EQ(DataType::Int(4).max_int(), 7);
  EXPECT_EQ(DataType::UInt(4).max_int(), 15);
  EXPECT_THROW(DataType::Int(65), CompileError);
  EXPECT_THROW(DataType::Float(8), CompileError);
  EXPECT_THROW(DataType::Int(32, 0), CompileError);
}

TEST(Type, WrapAndRound) {
  EXPECT_EQ(wrap_to_type(200, DataType::Int(8)), -56);
  EXPECT_EQ(wrap_to_type(-1, DataType::UInt(8)), 255);
  EXPECT_EQ(wrap_to_type(9, DataType::Int(4)), -7);
  EXPECT_EQ(round_to_type(1.0 + 1.0 / 4096, DataType::Float(16)), 1.0);
  EXPECT_EQ(round_to_type(1.0 + 1.0 / 512, DataType::Float(16)), 1.0 + 1.0 / 512);
  EXPECT_EQ(round_to_type(1.0 + 1.0 / 256, DataType::BFloat16()), 1.0);
  EXPECT_EQ(round_to_type(65520.0, DataType::Float(16)), INFINITY);
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(-2.5)), -2.5);
  EXPECT_EQ(float_to_half_bits(1.0), 0x3c00);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(float_to_bfloat_bits(1.0), 0x3f80);
  EXPECT_EQ(bfloat_bits_to_float(float_to_bfloat_bits(3.140625)), 3.140625);
}

TEST(Node, OperatorsPromoteAndFold) {
  Var x("x"), y("y", DataType::Int(64));
  Expr e = x + 1;
  EXPECT_EQ(e.kind(), NodeKind::Add);
  EXPECT_EQ((x + y).dtype(), DataType::Int(64));
  EXPECT_EQ((Expr(2) + 3).as<IntImmNode>()->value, 5);
  Var f("f", DataType::Float(32));
  EXPECT_EQ((f * 2).dtype(), DataType::Float(32));
  EXPECT_EQ((x < 3).dtype(), DataType::Bool());
  EXPECT_EQ((make_ramp(x, 1, 4) + x).dtype(), DataType::Int(32, 4));
  Var u("u", DataType::UInt(32));
  EXPECT_THROW(x + u, CompileError);
  EXPECT_THROW(make_binary(NodeKind::Add, x, y), CompileError);
  EXPECT_EQ((Expr(7) / -2).as<IntImmNode>()->value, -4);  // floor division
  EXPECT_EQ((Expr(-7) % 3).as<IntImmNode>()->value, 2);
}

TEST(Node, AllKindsPrint) {
  Var i("i"), j("j");
  Var buf("A", DataType::Handle());
  Buffer b("B", DataType::Float(32), {16, 16});
  Stmt body = make_seq({
      make_store(buf, make_load(DataType::Float(32), buf, i) + 1.5f, i),
      make_buffer_store(b, make_buffer_load(b, {i, j}), {j, i}),
      make_if(i < 3, make_evaluate(make_call(DataType::Float(32), "exp", {make_float(1.0)})), make_no_op()),
      make_store(buf, make_broadcast(make_float(0.0), 4), make_ramp(i * 4, 1, 4)),
      make_let_stmt(j, i + 1, make_evaluate(make_select(j > 2, j, i))),
      make_attr("pragma_unroll", i, 1, make_evaluate(make_cast(DataType::Int(8), i))),
      make_evaluate(make_not(eq(i, j))),
  });
  Stmt loop = make_for(i, 0, 16, ForKind::Parallel, make_for(j, 0, 4, ForKind::Vectorized, body));
  Stmt alloc = make_allocate(buf, DataType::Float(32), 64, "local", loop);
  std::string text = to_string(alloc);
  for (const char* want : {"allocate A: float32[64] in local", "parallel for (i, 0, 16) {", "vectorized for (j, 0, 4) {",
                           "A[i] = A[i] + 1.5f", "B[j, i] = B[i, j]", "if (i < 3) {", "exp(1.0f)", "} else {",
                           "A[ramp(i*4, 1, 4)] = broadcast(0.0f, 4)", "let j = i + 1", "select(j > 2, j, i)",
                           "// attr [i] pragma_unroll = 1", "int8(i)", "!(i == j)"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_EQ(to_string((i + j) * 2), "(i + j)*2");
  EXPECT_EQ(to_string(i - (j - 1)), "i - (j - 1)");
  EXPECT_EQ(to_string(make_int(5, DataType::Int(64))), "int64(5)");
  EXPECT_EQ(to_string(make_float(2.0, DataType::Float(16))), "float16(2.0)");
}

TEST(Structural, EqualAndHash) {
  Var x("x"), y("y");
  EXPECT_TRUE(structural_equal(x + y * 2, x + y * 2));
  EXPECT_FALSE(structural_equal(x + y, y + x));
  EXPECT_FALSE(structural_equal(x + 1, x + make_int(1, DataType::Int(32)) + 0));
  EXPECT_EQ(structural_hash(x * 3 - y), structural_hash(x * 3 - y));
  EXPECT_NE(structural_hash(x * 3 - y), structural_hash(x * 4 - y));
  // Bound variables match by position.
  Var i("i"), k("k");
  Var buf("A", DataType::Handle());
  Stmt a = make_for(i, 0, 8, ForKind::Serial, make_store(buf, x, i));
  Stmt b = make_for(k, 0, 8, ForKind::Serial, make_store(buf, x, k));
  Stmt c = make_for(k, 0, 8, ForKind::Serial, make_store(buf, x, k + 1));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_FALSE(structural_equal(a, c));
  // Usable as a hash set key.
  std::unordered_set<Expr, StructuralHash, StructuralEqual> set;
  set.insert(x + 1);
  set.insert(x + 1);
  set.insert(x + 2);
  EXPECT_EQ(set.size(), 2u);
}

TEST(Functor, VisitorCountsAndMutatorKeepsIdentity) {
  Var x("x"), y("y");
  Var buf("A", DataType::Handle());
  Stmt s = make_for(x, 0, 4, ForKind::Serial, make_store(buf, make_load(DataType::Int(32), buf, x) + y, x));
  int loads = 0;
  post_order_visit(s, [&](const Node* n) { loads += n->kind == NodeKind::Load; });
  EXPECT_EQ(loads, 1);

  class Nothing : public IRMutator {};
  Nothing m;
  EXPECT_TRUE(m.mutate(s).same_as(s));  // an unchanged tree is the same tree

  class RenameY : public IRMutator {
   public:
    explicit RenameY(Var y, Var z) : y_(std::move(y)), z_(std::move(z)) {}
    using IRMutator::mutate;

   protected:
    Expr mutate_(const VarNode* op, const Expr& self) override { return op == y_.get() ? Expr(z_) : self; }

   private:
    Var y_, z_;
  };
  Var z("z");
  Stmt t = RenameY(y, z).mutate(s);
  EXPECT_FALSE(t.same_as(s));
  EXPECT_TRUE(uses_var(t, z));
  EXPECT_FALSE(uses_var(t, y));
  // The loop's min and extent were untouched, so they are shared.
  EXPECT_TRUE(t.as<ForNode>()->extent.same_as(s.as<ForNode>()->extent));
}

TEST(Functor, Substitute) {
  Var x("x"), y("y");
  Expr e = substitute(x * 2 + y, x, y + 1);
  EXPECT_EQ(to_string(e), "(y + 1)*2 + y");
  std::vector<Var> vars = free_vars(x * y + x);
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_TRUE(vars[0].same_as(x));
}

}  // namespace
}  // namespace kiln::ir
