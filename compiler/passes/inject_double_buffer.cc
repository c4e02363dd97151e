#include "compiler/passes/inject_double_buffer.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"

namespace kiln::passes {

namespace {

// Adds `offset` to every access of one buffer.
class OffsetAccesses : public ir::IRMutator {
 public:
  OffsetAccesses(const ir::VarNode* buf, ir::Expr offset) : buf_(buf), offset_(std::move(offset)) {}
  using IRMutator::mutate;

 protected:
  ir::Expr mutate_(const ir::LoadNode* op, const ir::Expr& self) override {
    ir::Expr e = IRMutator::mutate_(op, self);
    if (op->buffer_var.get() != buf_) return e;
    const auto* l = e.as<ir::LoadNode>();
    return ir::make_load(l->dtype, l->buffer_var, l->index + offset_);
  }
  ir::Stmt mutate_(const ir::StoreNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    if (op->buffer_var.get() != buf_) return s;
    const auto* st = s.as<ir::StoreNode>();
    return ir::make_store(st->buffer_var, st->value, st->index + offset_);
  }

 private:
  const ir::VarNode* buf_;
  ir::Expr offset_;
};

// A loop whose body allocates a double-buffered buffer. The allocation moves out of
// the loop with two halves; iteration k uses half k % 2. When the body is exactly
// "fill the buffer; use it", the loop is also pipelined: the fill for k + 1 is issued
// before the use of k, so an accelerator can overlap them.
class DoubleBufferInjector : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* loop = s.as<ir::ForNode>();
    if (!loop) return s;
    const auto* alloc = loop->body.as<ir::AllocateNode>();
    const auto* attr = alloc ? alloc->body.as<ir::AttrNode>() : nullptr;
    if (!attr || attr->key != "double_buffer_scope" || !ir::as_const_int(alloc->extent)) return s;
    const ir::Var& k = loop->var;
    ir::Expr half = (k - loop->min) % 2 * alloc->extent;
    ir::Stmt body = OffsetAccesses(alloc->buffer_var.get(), half).mutate(attr->body);
    auto reallocate = [&](ir::Stmt b) {
      return ir::make_allocate(alloc->buffer_var, alloc->dtype, alloc->extent * 2, alloc->scope, b);
    };
    const auto* seq = body.as<ir::SeqNode>();
    const int64_t* ext = ir::as_const_int(loop->extent);
    // The halves are shared by the iterations, so they must run in order.
    ir::ForKind kind = loop->for_kind == ir::ForKind::Parallel ? ir::ForKind::Serial : loop->for_kind;
    if (!seq || seq->seq.size() < 2 || !ext || *ext < 2) {
      return reallocate(ir::make_for(k, loop->min, loop->extent, kind, body, loop->thread_tag));
    }
    ir::Stmt fill = seq->seq[0];
    ir::Stmt use = ir::make_seq(std::vector<ir::Stmt>(seq->seq.begin() + 1, seq->seq.end()));
    ir::Expr last = loop->min + loop->extent - 1;
    ir::Stmt steady = ir::make_seq({ir::substitute(fill, k, k + 1), use});
    return reallocate(ir::make_seq({
        ir::substitute(fill, k, loop->min),
        ir::make_for(k, loop->min, loop->extent - 1, kind, steady, loop->thread_tag),
        ir::substitute(use, k, last),
    }));
  }
};

}  // namespace

ir::Stmt inject_double_buffer(const ir::Stmt& s) { return DoubleBufferInjector().mutate(s); }

}  // namespace kiln::passes
