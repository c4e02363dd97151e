#include "compiler/passes/unroll_loop.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/op.h"
#include "compiler/support/error.h"

namespace kiln::passes {

namespace {

class Unroller : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::ForNode* op, const ir::Stmt& self) override {
    ir::Stmt s = IRMutator::mutate_(op, self);
    const auto* loop = s.as<ir::ForNode>();
    if (!loop || loop->for_kind != ir::ForKind::Unrolled) return s;
    const int64_t* n = ir::as_const_int(loop->extent);
    if (!n) throw CompileError("unroll_loop: loop '" + loop->var.name() + "' has no constant extent");
    std::vector<ir::Stmt> seq;
    for (int64_t i = 0; i < *n; ++i) {
      seq.push_back(ir::substitute(loop->body, loop->var, loop->min + ir::make_int(i, loop->var.dtype())));
    }
    return seq.empty() ? ir::make_no_op() : ir::make_seq(std::move(seq));
  }
};

}  // namespace

ir::Stmt unroll_loop(const ir::Stmt& s) { return Unroller().mutate(s); }

}  // namespace kiln::passes
