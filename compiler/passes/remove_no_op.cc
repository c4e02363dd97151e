#include "compiler/passes/remove_no_op.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"

namespace kiln::passes {

namespace {

class NoOpRemover : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* loop = s.as<ir::ForNode>();
    return loop && ir::is_no_op(loop->body) ? ir::make_no_op() : s;
  }
  ir::Stmt mutate_(const ir::SeqNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* seq = s.as<ir::SeqNode>();
    if (!seq) return s;
    std::vector<ir::Stmt> kept;
    for (const ir::Stmt& c : seq->seq) {
      if (!ir::is_no_op(c)) kept.push_back(c);
    }
    if (kept.size() == seq->seq.size()) return s;
    return kept.empty() ? ir::make_no_op() : ir::make_seq(std::move(kept));
  }
  ir::Stmt mutate_(const ir::IfThenElseNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* i = s.as<ir::IfThenElseNode>();
    if (!i) return s;
    bool then_empty = ir::is_no_op(i->then_case), else_empty = ir::is_no_op(i->else_case);
    if (then_empty && else_empty) return ir::make_no_op();
    if (else_empty && i->else_case.defined()) return ir::make_if(i->cond, i->then_case);
    return s;
  }
  ir::Stmt mutate_(const ir::LetStmtNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* l = s.as<ir::LetStmtNode>();
    return l && ir::is_no_op(l->body) ? ir::make_no_op() : s;
  }
  ir::Stmt mutate_(const ir::AttrNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* a = s.as<ir::AttrNode>();
    return a && ir::is_no_op(a->body) ? ir::make_no_op() : s;
  }
  ir::Stmt mutate_(const ir::AllocateNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* a = s.as<ir::AllocateNode>();
    if (!a) return s;
    if (ir::is_no_op(a->body)) return ir::make_no_op();
    // An allocation nobody reads or writes is dead.
    if (!ir::uses_var(a->body, a->buffer_var)) return a->body;
    return s;
  }
};

}  // namespace

ir::Stmt remove_no_op(const ir::Stmt& s) { return NoOpRemover().mutate(s); }

}  // namespace kiln::passes
