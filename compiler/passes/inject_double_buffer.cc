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

// A loop whose body allocates double-buffered buffers (one, or several nested
// directly in one another, as when two operands of one step are double buffered).
// The allocations move out of the loop with two halves each; iteration k uses half
// k % 2. When each level is "fill this buffer; then the rest", the loop is also
// pipelined: the fills for k + 1 are issued before the use of k, so an accelerator
// can overlap them.
class DoubleBufferInjector : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* loop = s.as<ir::ForNode>();
    if (!loop) return s;
    std::vector<const ir::AllocateNode*> bufs;
    std::vector<ir::Stmt> fills;
    ir::Stmt rest = loop->body;
    bool pipelined = true;
    while (true) {
      const auto* alloc = rest.as<ir::AllocateNode>();
      const auto* attr = alloc ? alloc->body.as<ir::AttrNode>() : nullptr;
      if (!attr || attr->key != "double_buffer_scope" || !ir::as_const_int(alloc->extent)) break;
      bufs.push_back(alloc);
      const auto* seq = attr->body.as<ir::SeqNode>();
      if (!seq || seq->seq.size() < 2) {
        pipelined = false;
        rest = attr->body;
        break;
      }
      fills.push_back(seq->seq[0]);
      rest = ir::make_seq(std::vector<ir::Stmt>(seq->seq.begin() + 1, seq->seq.end()));
    }
    if (bufs.empty()) return s;
    const ir::Var& k = loop->var;
    auto offsets = [&](ir::Stmt b) {
      for (const ir::AllocateNode* a : bufs) b = OffsetAccesses(a->buffer_var.get(), (k - loop->min) % 2 * a->extent).mutate(b);
      return b;
    };
    auto reallocate = [&](ir::Stmt b) {
      for (auto it = bufs.rbegin(); it != bufs.rend(); ++it)
        b = ir::make_allocate((*it)->buffer_var, (*it)->dtype, (*it)->extent * 2, (*it)->scope, b);
      return b;
    };
    const int64_t* ext = ir::as_const_int(loop->extent);
    // The halves are shared by the iterations, so they must run in order.
    ir::ForKind kind = loop->for_kind == ir::ForKind::Parallel ? ir::ForKind::Serial : loop->for_kind;
    if (!pipelined || !ext || *ext < 2) {
      std::vector<ir::Stmt> all = fills;
      all.push_back(rest);
      return reallocate(ir::make_for(k, loop->min, loop->extent, kind, offsets(ir::make_seq(all)), loop->thread_tag));
    }
    ir::Stmt fill = offsets(ir::make_seq(fills));
    ir::Stmt use = offsets(rest);
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
