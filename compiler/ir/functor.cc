#include "compiler/ir/functor.h"

#include "compiler/support/error.h"

namespace kiln::ir {

// ---------------------------------------------------------------- visitor

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
#define KILN_CASE(N) \
  case NodeKind::N: return visit_(static_cast<const N##Node*>(e.get()));
    KILN_FOR_EACH_EXPR_NODE(KILN_CASE)
#undef KILN_CASE
    default: throw CompileError("IRVisitor: statement in expression position");
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define KILN_CASE(N) \
  case NodeKind::N: return visit_(static_cast<const N##Node*>(s.get()));
    KILN_FOR_EACH_STMT_NODE(KILN_CASE)
#undef KILN_CASE
    default: throw CompileError("IRVisitor: expression in statement position");
  }
}

void IRVisitor::visit_(const IntImmNode*) {}
void IRVisitor::visit_(const FloatImmNode*) {}
void IRVisitor::visit_(const StringImmNode*) {}
void IRVisitor::visit_(const VarNode*) {}
#define KILN_BIN(N)                           \
  void IRVisitor::visit_(const N##Node* op) { \
    visit(op->a);                             \
    visit(op->b);                             \
  }
KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
void IRVisitor::visit_(const NotNode* op) { visit(op->a); }
void IRVisitor::visit_(const CastNode* op) { visit(op->value); }
void IRVisitor::visit_(const SelectNode* op) {
  visit(op->cond);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit_(const LoadNode* op) {
  visit(op->buffer_var);
  visit(op->index);
}
void IRVisitor::visit_(const BufferLoadNode* op) {
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit_(const ProducerLoadNode* op) {
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit_(const RampNode* op) {
  visit(op->base);
  visit(op->stride);
}
void IRVisitor::visit_(const BroadcastNode* op) { visit(op->value); }
void IRVisitor::visit_(const CallNode* op) {
  for (const Expr& a : op->args) visit(a);
}
void IRVisitor::visit_(const LetNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_(const ReduceNode* op) {
  visit(op->source);
  visit(op->condition);
}
void IRVisitor::visit_(const LetStmtNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_(const ForNode* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_(const StoreNode* op) {
  visit(op->buffer_var);
  visit(op->value);
  visit(op->index);
}
void IRVisitor::visit_(const BufferStoreNode* op) {
  visit(op->value);
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit_(const AllocateNode* op) {
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_(const RealizeNode* op) {
  for (const Range& r : op->bounds) {
    visit(r.min);
    visit(r.extent);
  }
  visit(op->body);
}
void IRVisitor::visit_(const IfThenElseNode* op) {
  visit(op->cond);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit_(const SeqNode* op) {
  for (const Stmt& s : op->seq) visit(s);
}
void IRVisitor::visit_(const AttrNode* op) {
  visit(op->node);
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_(const EvaluateNode* op) { visit(op->value); }

// ---------------------------------------------------------------- mutator

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
#define KILN_CASE(N) \
  case NodeKind::N: return mutate_(static_cast<const N##Node*>(e.get()), e);
    KILN_FOR_EACH_EXPR_NODE(KILN_CASE)
#undef KILN_CASE
    default: throw CompileError("IRMutator: statement in expression position");
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define KILN_CASE(N) \
  case NodeKind::N: return mutate_(static_cast<const N##Node*>(s.get()), s);
    KILN_FOR_EACH_STMT_NODE(KILN_CASE)
#undef KILN_CASE
    default: throw CompileError("IRMutator: expression in statement position");
  }
}

bool IRMutator::mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out) {
  bool changed = false;
  out->reserve(in.size());
  for (const Expr& e : in) {
    out->push_back(mutate(e));
    changed = changed || !out->back().same_as(e);
  }
  return changed;
}

Expr IRMutator::mutate_(const IntImmNode*, const Expr& self) { return self; }
Expr IRMutator::mutate_(const FloatImmNode*, const Expr& self) { return self; }
Expr IRMutator::mutate_(const StringImmNode*, const Expr& self) { return self; }
Expr IRMutator::mutate_(const VarNode*, const Expr& self) { return self; }
#define KILN_BIN(N)                                                 \
  Expr IRMutator::mutate_(const N##Node* op, const Expr& self) {    \
    Expr a = mutate(op->a), b = mutate(op->b);                      \
    if (a.same_as(op->a) && b.same_as(op->b)) return self;          \
    return make_binary(NodeKind::N, std::move(a), std::move(b));    \
  }
KILN_BIN(Add) KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(Min) KILN_BIN(Max)
KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And) KILN_BIN(Or)
#undef KILN_BIN
Expr IRMutator::mutate_(const NotNode* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : make_not(a);
}
Expr IRMutator::mutate_(const CastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : make_cast(op->dtype.with_lanes(v.dtype().lanes()), v);
}
Expr IRMutator::mutate_(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return make_select(c, t, f);
}
Expr IRMutator::mutate_(const LoadNode* op, const Expr& self) {
  Expr i = mutate(op->index);
  return i.same_as(op->index) ? self : make_load(op->dtype.with_lanes(i.dtype().lanes()), op->buffer_var, i);
}
Expr IRMutator::mutate_(const BufferLoadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  return mutate_all(op->indices, &idx) ? make_buffer_load(op->buffer, std::move(idx)) : self;
}
Expr IRMutator::mutate_(const ProducerLoadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  return mutate_all(op->indices, &idx) ? make_producer_load(op->producer, std::move(idx)) : self;
}
Expr IRMutator::mutate_(const RampNode* op, const Expr& self) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return self;
  return make_ramp(b, s, op->lanes);
}
Expr IRMutator::mutate_(const BroadcastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : make_broadcast(v, op->lanes);
}
Expr IRMutator::mutate_(const CallNode* op, const Expr& self) {
  std::vector<Expr> args;
  return mutate_all(op->args, &args) ? make_call(op->dtype, op->name, std::move(args)) : self;
}
Expr IRMutator::mutate_(const LetNode* op, const Expr& self) {
  Expr v = mutate(op->value), b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return make_let(op->var, v, b);
}
Expr IRMutator::mutate_(const ReduceNode* op, const Expr& self) {
  Expr s = mutate(op->source), c = mutate(op->condition);
  if (s.same_as(op->source) && c.same_as(op->condition)) return self;
  return make_reduce(op->combiner, s, op->axis, c);
}

Stmt IRMutator::mutate_(const LetStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return make_let_stmt(op->var, v, b);
}
Stmt IRMutator::mutate_(const ForNode* op, const Stmt& self) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return self;
  return make_for(op->var, mn, ext, op->for_kind, b, op->thread_tag);
}
Stmt IRMutator::mutate_(const StoreNode* op, const Stmt& self) {
  Expr v = mutate(op->value), i = mutate(op->index);
  if (v.same_as(op->value) && i.same_as(op->index)) return self;
  return make_store(op->buffer_var, v, i);
}
Stmt IRMutator::mutate_(const BufferStoreNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  std::vector<Expr> idx;
  bool changed = mutate_all(op->indices, &idx);
  if (!changed && v.same_as(op->value)) return self;
  return make_buffer_store(op->buffer, v, std::move(idx));
}
Stmt IRMutator::mutate_(const AllocateNode* op, const Stmt& self) {
  Expr e = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (e.same_as(op->extent) && b.same_as(op->body)) return self;
  return make_allocate(op->buffer_var, op->dtype, e, op->scope, b);
}
Stmt IRMutator::mutate_(const RealizeNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Range> bounds;
  for (const Range& r : op->bounds) {
    Range n(mutate(r.min), mutate(r.extent));
    changed = changed || !n.min.same_as(r.min) || !n.extent.same_as(r.extent);
    bounds.push_back(n);
  }
  Stmt b = mutate(op->body);
  if (!changed && b.same_as(op->body)) return self;
  return make_realize(op->buffer, std::move(bounds), b);
}
Stmt IRMutator::mutate_(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return make_if(c, t, e);
}
Stmt IRMutator::mutate_(const SeqNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> seq;
  for (const Stmt& s : op->seq) {
    seq.push_back(mutate(s));
    changed = changed || !seq.back().same_as(s);
  }
  return changed ? make_seq(std::move(seq)) : self;
}
Stmt IRMutator::mutate_(const AttrNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return make_attr(op->key, op->node, v, b);
}
Stmt IRMutator::mutate_(const EvaluateNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : make_evaluate(v);
}

// ---------------------------------------------------------------- post-order walk

namespace {

class FnVisitor : public IRVisitor {
 public:
  explicit FnVisitor(const std::function<void(const Node*)>& f) : f_(f) {}
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    IRVisitor::visit(e);
    f_(e.get());
  }
  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    IRVisitor::visit(s);
    f_(s.get());
  }

 private:
  const std::function<void(const Node*)>& f_;
};

}  // namespace

void post_order_visit(const Stmt& s, const std::function<void(const Node*)>& f) { FnVisitor(f).visit(s); }
void post_order_visit(const Expr& e, const std::function<void(const Node*)>& f) { FnVisitor(f).visit(e); }

}  // namespace kiln::ir
