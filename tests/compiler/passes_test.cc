// The lowering passes one at a time, on hand-built IR.
#include <gtest/gtest.h>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/passes.h"
#include "compiler/support/error.h"

namespace kiln::passes {
namespace {

using ir::DataType;
using ir::Expr;
using ir::ForKind;
using ir::Stmt;
using ir::Var;

Var buf(const char* name) { return Var(name, DataType::Handle()); }

TEST(Passes, StorageFlattenOffsetsARealizedRegion) {
  ir::Buffer b("B", DataType::Float(32), {16, 16});
  ir::Buffer out("O", DataType::Float(32), {16});
  Var i("i"), j("j");
  Stmt body = ir::make_for(j, 0, 4, ForKind::Serial,
                           ir::make_buffer_store(b, ir::make_float(1.0), {i * 2, j + 8}));
  body = ir::make_seq({body, ir::make_buffer_store(out, ir::make_buffer_load(b, {i * 2, Expr(9)}), {i})});
  Stmt realize = ir::make_realize(b, {ir::Range(i * 2, 1), ir::Range(8, 4)}, body);
  Stmt s = ir::make_for(i, 0, 8, ForKind::Serial, realize);
  std::string text = ir::to_string(simplify(storage_flatten(s, {out})));
  EXPECT_NE(text.find("allocate B: float32[4] in global"), std::string::npos) << text;
  EXPECT_NE(text.find("B[j] = 1.0f"), std::string::npos) << text;
  EXPECT_NE(text.find("O[i] = B[1]"), std::string::npos) << text;
  EXPECT_THROW(storage_flatten(ir::make_buffer_store(b, ir::make_float(1.0), {0, 0}), {}), CompileError);
}

TEST(Passes, LoopPartitionSplitsOffTheTail) {
  Var i("i"), j("j"), a = buf("A");
  Stmt s = ir::make_for(i, 0, 10, ForKind::Serial,
                        ir::make_if(ir::likely(i * 4 + 3 < 37), ir::make_store(a, ir::make_int(1), i)));
  EXPECT_EQ(ir::to_string(remove_no_op(simplify(loop_partition(s)))), "for (i, 0, 9) {\n  A[i] = 1\n}\n");
  // the condition of a nest: the outer loop splits, then the inner loop of the tail
  Stmt nest = ir::make_for(i, 0, 4, ForKind::Serial,
                           ir::make_for(j, 0, 4, ForKind::Serial,
                                        ir::make_if(ir::likely(i * 4 + j < 14), ir::make_store(a, ir::make_int(1), i * 4 + j))));
  EXPECT_EQ(ir::to_string(remove_no_op(simplify(loop_partition(nest)))),
            "for (i, 0, 3) {\n  for (j, 0, 4) {\n    A[i*4 + j] = 1\n  }\n}\nfor (j, 0, 2) {\n  A[j + 12] = 1\n}\n");
  // a condition that always holds disappears
  Stmt t = ir::make_for(i, 0, 4, ForKind::Serial, ir::make_if(ir::likely(i < 9), ir::make_store(a, ir::make_int(1), i)));
  EXPECT_EQ(ir::to_string(simplify(loop_partition(t))), "for (i, 0, 4) {\n  A[i] = 1\n}\n");
}

// A condition of the loop alone is false past its split, so a chain of selects (a
// concatenation's) leaves one operand to each part; a floor division of the loop's
// index (a fused loop's outer index) splits it too; each part is simplified with its
// own range, so a clamp of the index folds away.
TEST(Passes, LoopPartitionGivesEachOperandItsPart) {
  Var f("f"), a = buf("A"), b = buf("B"), c = buf("C"), d = buf("D");
  const DataType i32 = DataType::Int(32);
  auto load = [&](const Var& buffer, Expr index) { return ir::make_load(i32, buffer, std::move(index)); };
  // Rows of 7 fused with the operands' 2 + 2 + 1 rows: f / 7 is the row.
  Expr row = f / 7;
  Expr v = ir::select(ir::likely(row < 2), load(b, ir::max(ir::min(f, 13), 0)),
                      ir::select(ir::likely(row < 4), load(c, ir::max(ir::min(f - 14, 13), 0)), load(d, f - 28)));
  Stmt s = ir::make_for(f, 0, 35, ForKind::Parallel, ir::make_store(a, v, f));
  EXPECT_EQ(ir::to_string(remove_no_op(simplify(loop_partition(s)))),
            "parallel for (f, 0, 14) {\n  A[f] = B[f]\n}\nparallel for (f, 14, 14) {\n  A[f] = C[f - 14]\n}\n"
            "parallel for (f, 28, 7) {\n  A[f] = D[f - 28]\n}\n");
  // Where the condition also depends on another variable it is not known past its
  // split, and stays there.
  Var j("j");
  Stmt t = ir::make_for(f, 0, 4, ForKind::Serial,
                        ir::make_for(j, 0, 3, ForKind::Serial,
                                     ir::make_store(a, ir::select(ir::likely(f + j < 3), load(b, f + j), ir::make_int(0)), f * 3 + j)));
  std::string text = ir::to_string(remove_no_op(simplify(loop_partition(t))));
  EXPECT_EQ(text, "for (j, 0, 3) {\n  A[j] = B[j]\n}\nfor (f, 1, 3) {\n  for (j, 0, 3) {\n"
                  "    A[f*3 + j] = select(likely(f + j < 3), B[f + j], 0)\n  }\n}\n");
}

// A part of one iteration (a padded image's first row of tiles) is not split again by
// a serial loop inside it on a condition that does not involve its own variable (the
// columns' border stays a test there); the interior's part is.
TEST(Passes, LoopPartitionLeavesTheBordersInnerLoopsWhole) {
  Var y("y"), x("x"), a = buf("A"), b = buf("B"), c = buf("C");
  const DataType i32 = DataType::Int(32);
  // A row's term and a column's, each zero on its border.
  Expr v = ir::select(ir::likely(y >= 1), ir::make_load(i32, b, ir::max(y - 1, 0)), ir::make_int(0)) +
           ir::select(ir::likely(x >= 1), ir::make_load(i32, c, ir::max(x - 1, 0)), ir::make_int(0));
  Stmt s = ir::make_for(y, 0, 9, ForKind::Serial, ir::make_for(x, 0, 9, ForKind::Serial, ir::make_store(a, v, y * 9 + x)));
  // The first row: one loop over the columns with the column's test; the interior's
  // rows: the first column apart and the rest plain.
  EXPECT_EQ(ir::to_string(remove_no_op(simplify(loop_partition(s)))),
            "for (x, 0, 9) {\n  A[x] = select(likely(x >= 1), C[max(x - 1, 0)], 0)\n}\n"
            "for (y, 1, 8) {\n  A[y*9] = B[y - 1]\n  for (x, 1, 8) {\n    A[y*9 + x] = B[y - 1] + C[x - 1]\n  }\n}\n");
}

TEST(Passes, VectorizeAndItsFallback) {
  Var i("i"), j("j"), a = buf("A"), b = buf("B");
  Stmt s = ir::make_for(i, 0, 8, ForKind::Vectorized,
                        ir::make_store(a, ir::make_load(DataType::Float(32), b, j * 8 + i) * 2.0f, j * 8 + i));
  EXPECT_EQ(ir::to_string(simplify(vectorize_loop(s))),
            "A[ramp(j*8, 1, 8)] = B[ramp(j*8, 1, 8)]*broadcast(2.0f, 8)\n");
  // every lane would write A[j]: not a vector store, so the loop stays serial
  Stmt race = ir::make_for(i, 0, 8, ForKind::Vectorized,
                           ir::make_store(a, ir::make_load(DataType::Float(32), b, i), j));
  EXPECT_EQ(ir::to_string(vectorize_loop(race)), "for (i, 0, 8) {\n  A[j] = B[i]\n}\n");
}

TEST(Passes, VectorizeReducesAcrossLanes) {
  Var i("i"), j("j"), a = buf("A"), b = buf("B");
  auto acc = [&] { return ir::make_load(DataType::Float(32), a, j); };
  auto elem = [&] { return ir::make_load(DataType::Float(32), b, j * 16 + i); };
  // A[j] accumulates a vector of B: its lanes combined into one element
  Stmt sum = ir::make_for(i, 0, 16, ForKind::Vectorized, ir::make_store(a, acc() + elem() * 2.0f, j));
  EXPECT_EQ(ir::to_string(simplify(vectorize_loop(sum))),
            "A[j] = A[j] + vector_reduce_add(B[ramp(j*16, 1, 16)]*broadcast(2.0f, 16))\n");
  Stmt mx = ir::make_for(i, 0, 8, ForKind::Vectorized, ir::make_store(a, ir::max(elem(), acc()), j));
  EXPECT_EQ(ir::to_string(simplify(vectorize_loop(mx))), "A[j] = max(A[j], vector_reduce_max(B[ramp(j*16, 1, 8)]))\n");
  // not a reduction: a product, a value that reads the accumulator, lanes not a power of two
  Stmt prod = ir::make_for(i, 0, 8, ForKind::Vectorized, ir::make_store(a, acc() * elem(), j));
  EXPECT_EQ(ir::to_string(vectorize_loop(prod)), "for (i, 0, 8) {\n  A[j] = A[j]*B[j*16 + i]\n}\n");
  Stmt self = ir::make_for(i, 0, 8, ForKind::Vectorized,
                           ir::make_store(a, acc() + ir::make_load(DataType::Float(32), a, i), j));
  EXPECT_EQ(ir::to_string(vectorize_loop(self)), "for (i, 0, 8) {\n  A[j] = A[j] + A[i]\n}\n");
  Stmt odd = ir::make_for(i, 0, 6, ForKind::Vectorized, ir::make_store(a, acc() + elem(), j));
  EXPECT_EQ(ir::to_string(vectorize_loop(odd)), "for (i, 0, 6) {\n  A[j] = A[j] + B[j*16 + i]\n}\n");
}

TEST(Passes, UnrollAndRemoveNoOp) {
  Var i("i"), a = buf("A");
  Stmt s = ir::make_for(i, 0, 3, ForKind::Unrolled, ir::make_store(a, ir::make_int(0), i));
  EXPECT_EQ(ir::to_string(simplify(unroll_loop(s))), "A[0] = 0\nA[1] = 0\nA[2] = 0\n");
  Var t = buf("T");
  Stmt dead = ir::make_seq({ir::make_allocate(t, DataType::Int(32), 4, "local", ir::make_store(a, ir::make_int(1), 0)),
                            ir::make_for(i, 0, 4, ForKind::Serial, ir::make_no_op()),
                            ir::make_if(i < 2, ir::make_no_op())});
  EXPECT_EQ(ir::to_string(remove_no_op(dead)), "A[0] = 1\n");
}

TEST(Passes, InjectPrefetchFetchesAtEveryIterationsStart) {
  Var k("k"), a = buf("A"), b = buf("B");
  Stmt loop = ir::make_for(k, 0, 4, ForKind::Serial, ir::make_store(a, ir::make_load(DataType::Float(32), b, k), k));
  Stmt s = ir::make_attr("pragma_prefetch", k, ir::make_load(DataType::Float(32), b, k * 16 + 64), loop);
  EXPECT_EQ(ir::to_string(inject_prefetch(s)), "for (k, 0, 4) {\n  prefetch(B[k*16 + 64])\n  A[k] = B[k]\n}\n");
  // Two pragmas on one loop: both fetches, in order.
  Stmt two = ir::make_attr("pragma_prefetch", k, ir::make_load(DataType::Float(32), b, k * 16 + 64),
                           ir::make_attr("pragma_prefetch", k, ir::make_load(DataType::Float(32), b, k * 16 + 80), loop));
  EXPECT_EQ(ir::to_string(inject_prefetch(two)),
            "for (k, 0, 4) {\n  prefetch(B[k*16 + 64])\n  prefetch(B[k*16 + 80])\n  A[k] = B[k]\n}\n");
  // A pragma whose value names no element, or that sits on no loop, is an error that says so.
  try {
    inject_prefetch(ir::make_attr("pragma_prefetch", k, ir::make_int(1), loop));
    ADD_FAILURE() << "a prefetch of no element was accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("one element of a tensor"), std::string::npos) << e.what();
  }
  EXPECT_THROW(inject_prefetch(ir::make_attr("pragma_prefetch", k, ir::make_load(DataType::Float(32), b, k), ir::make_no_op())),
               CompileError);
}

TEST(Passes, VirtualThreadCopiesBuffersAndInterleaves) {
  Var v("vt"), k("k"), t = buf("T"), a = buf("A");
  Stmt body = ir::make_allocate(
      t, DataType::Int(32), 2, "local",
      ir::make_for(k, 0, 3, ForKind::Serial,
                   ir::make_seq({ir::make_store(t, k + v, 0), ir::make_store(a, ir::make_load(DataType::Int(32), t, 0), v * 3 + k)})));
  Stmt s = ir::make_for(v, 0, 2, ForKind::ThreadBinding, body, "vthread");
  std::string text = ir::to_string(simplify(inject_virtual_thread(s)));
  EXPECT_NE(text.find("allocate T: int32[4] in local"), std::string::npos) << text;
  EXPECT_NE(text.find("for (k, 0, 3) {\n  T[0] = k\n  T[2] = k + 1\n  A[k] = T[0]\n  A[k + 3] = T[2]\n"), std::string::npos) << text;
}

TEST(Passes, DoubleBufferPipelines) {
  Var k("k"), t = buf("T"), a = buf("A"), b = buf("B");
  Stmt fill = ir::make_store(t, ir::make_load(DataType::Int(32), b, k), 0);
  Stmt use = ir::make_store(a, ir::make_load(DataType::Int(32), t, 0), k);
  Stmt s = ir::make_for(k, 0, 4, ForKind::Serial,
                        ir::make_allocate(t, DataType::Int(32), 1, "local",
                                          ir::make_attr("double_buffer_scope", t, 1, ir::make_seq({fill, use}))));
  std::string text = ir::to_string(simplify(inject_double_buffer(s)));
  EXPECT_EQ(text,
            "allocate T: int32[2] in local\n"
            "T[0] = B[0]\n"
            "for (k, 0, 3) {\n"
            "  T[(k + 1) % 2] = B[k + 1]\n"
            "  A[k] = T[k % 2]\n"
            "}\n"
            "A[3] = T[1]\n");
}

}  // namespace
}  // namespace kiln::passes
