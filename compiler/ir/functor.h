#pragma once
// The one visitor and the one mutator of the loop IR. Override only the nodes you
// care about; the defaults walk (or rebuild) the children. The mutator returns the
// very same node when none of its children changed.
#include <functional>

#include "compiler/ir/node.h"

namespace kiln::ir {

#define KILN_FOR_EACH_EXPR_NODE(X)                                                             \
  X(IntImm) X(FloatImm) X(StringImm) X(Var) X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(Min) X(Max) \
  X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(And) X(Or) X(Not) X(Cast) X(Select) X(Load)          \
  X(BufferLoad) X(ProducerLoad) X(Ramp) X(Broadcast) X(Call) X(Let) X(Reduce)
#define KILN_FOR_EACH_STMT_NODE(X) \
  X(LetStmt) X(For) X(Store) X(BufferStore) X(Allocate) X(Realize) X(IfThenElse) X(Seq) X(Attr) X(Evaluate)

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
#define KILN_DECL(N) virtual void visit_(const N##Node* op);
  KILN_FOR_EACH_EXPR_NODE(KILN_DECL)
  KILN_FOR_EACH_STMT_NODE(KILN_DECL)
#undef KILN_DECL
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
#define KILN_DECL(N) virtual Expr mutate_(const N##Node* op, const Expr& self);
  KILN_FOR_EACH_EXPR_NODE(KILN_DECL)
#undef KILN_DECL
#define KILN_DECL(N) virtual Stmt mutate_(const N##Node* op, const Stmt& self);
  KILN_FOR_EACH_STMT_NODE(KILN_DECL)
#undef KILN_DECL

  // Mutates every element; returns true if any changed.
  bool mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out);
};

// Calls `f` on every node of a tree, children before parents.
void post_order_visit(const Stmt& s, const std::function<void(const Node*)>& f);
void post_order_visit(const Expr& e, const std::function<void(const Node*)>& f);

}  // namespace kiln::ir
