#include "compiler/passes/inject_virtual_thread.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"

namespace kiln::passes {

namespace {

// Gives each virtual thread its own copy of every buffer allocated inside it.
class ExpandBuffers : public ir::IRMutator {
 public:
  ExpandBuffers(ir::Var v, ir::Expr min, int64_t n) : v_(std::move(v)), min_(std::move(min)), n_(n) {}
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::AllocateNode* op, const ir::Stmt& self) override {
    if (ir::uses_var(op->extent, v_)) throw CompileError("inject_virtual_thread: allocation '" + op->buffer_var.name() + "' depends on the virtual thread");
    offsets_[op->buffer_var.get()] = (v_ - min_) * op->extent;
    ir::Stmt body = mutate(op->body);
    (void)self;
    return ir::make_allocate(op->buffer_var, op->dtype, op->extent * ir::make_int(n_, op->extent.dtype()), op->scope, body);
  }
  ir::Expr mutate_(const ir::LoadNode* op, const ir::Expr& self) override {
    ir::Expr e = IRMutator::mutate_(op, self);
    auto it = offsets_.find(op->buffer_var.get());
    if (it == offsets_.end()) return e;
    const auto* l = e.as<ir::LoadNode>();
    return ir::make_load(l->dtype, l->buffer_var, l->index + it->second);
  }
  ir::Stmt mutate_(const ir::StoreNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    auto it = offsets_.find(op->buffer_var.get());
    if (it == offsets_.end()) return s;
    const auto* st = s.as<ir::StoreNode>();
    return ir::make_store(st->buffer_var, st->value, st->index + it->second);
  }

 private:
  ir::Var v_;
  ir::Expr min_;
  int64_t n_;
  std::unordered_map<const ir::VarNode*, ir::Expr> offsets_;
};

// Pushes the virtual-thread loop down to the statements that depend on it and
// replaces it there by one copy per thread, so the threads' work interleaves. It
// stops at pragma regions, which are copied whole.
class Injector {
 public:
  Injector(ir::Var v, ir::Expr min, int64_t n) : v_(std::move(v)), min_(std::move(min)), n_(n) {}

  ir::Stmt inject(const ir::Stmt& s) {
    if (!ir::uses_var(s, v_)) return s;
    if (const auto* q = s.as<ir::SeqNode>()) {
      std::vector<ir::Stmt> seq;
      for (const ir::Stmt& c : q->seq) seq.push_back(inject(c));
      return ir::make_seq(seq);
    }
    if (const auto* f = s.as<ir::ForNode>(); f && !ir::uses_var(f->min, v_) && !ir::uses_var(f->extent, v_)) {
      return ir::make_for(f->var, f->min, f->extent, f->for_kind, inject(f->body), f->thread_tag);
    }
    if (const auto* i = s.as<ir::IfThenElseNode>(); i && !ir::uses_var(i->cond, v_)) {
      return ir::make_if(i->cond, inject(i->then_case), i->else_case.defined() ? inject(i->else_case) : ir::Stmt());
    }
    if (const auto* l = s.as<ir::LetStmtNode>(); l && !ir::uses_var(l->value, v_)) {
      return ir::make_let_stmt(l->var, l->value, inject(l->body));
    }
    if (const auto* a = s.as<ir::AllocateNode>()) {
      return ir::make_allocate(a->buffer_var, a->dtype, a->extent, a->scope, inject(a->body));
    }
    // A pragma region is a unit a backend maps as a whole (a DMA transfer, an
    // accelerator instruction): the threads get one copy of it each.
    if (const auto* a = s.as<ir::AttrNode>(); a && !ir::uses_var(a->value, v_) && !a->key.starts_with("pragma_")) {
      return ir::make_attr(a->key, a->node, a->value, inject(a->body));
    }
    std::vector<ir::Stmt> copies;
    for (int64_t t = 0; t < n_; ++t) copies.push_back(ir::substitute(s, v_, min_ + ir::make_int(t, v_.dtype())));
    return ir::make_seq(copies);
  }

 private:
  ir::Var v_;
  ir::Expr min_;
  int64_t n_;
};

class VirtualThreadInjector : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* loop = s.as<ir::ForNode>();
    if (!loop || loop->for_kind != ir::ForKind::ThreadBinding || loop->thread_tag != "vthread") return s;
    const int64_t* n = ir::as_const_int(loop->extent);
    if (!n) throw CompileError("inject_virtual_thread: virtual thread '" + loop->var.name() + "' has no constant extent");
    ir::Stmt body = ExpandBuffers(loop->var, loop->min, *n).mutate(loop->body);
    return Injector(loop->var, loop->min, *n).inject(body);
  }
};

}  // namespace

ir::Stmt inject_virtual_thread(const ir::Stmt& s) { return VirtualThreadInjector().mutate(s); }

}  // namespace kiln::passes
