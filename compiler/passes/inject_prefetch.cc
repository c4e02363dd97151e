#include "compiler/passes/inject_prefetch.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::passes {

namespace {

// Stage::pragma(iv, "prefetch", tensor(indices)) wraps iv's loop in
// attr pragma_prefetch = Load; the load's element is fetched into cache at the start
// of every iteration (its indices may use the loop's variable).
class PrefetchInjector : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::AttrNode* op, const ir::Stmt& self) override {
    if (op->key != "pragma_prefetch") return IRMutator::mutate_(op, self);
    const auto* loop = op->body.as<ir::ForNode>();
    const auto* load = op->value.as<ir::LoadNode>();
    if (!loop || !load || load->dtype.lanes() != 1) {
      throw CompileError("inject_prefetch: a prefetch pragma needs a loop and one element of a tensor; found " +
                         ir::to_string(op->value));
    }
    ir::Stmt body = mutate(loop->body);
    ir::Stmt fetch = ir::make_evaluate(ir::make_call(ir::DataType::Int(32), "prefetch", {op->value}));
    return ir::make_for(loop->var, loop->min, loop->extent, loop->for_kind, ir::make_seq({fetch, body}), loop->thread_tag);
  }
};

}  // namespace

ir::Stmt inject_prefetch(const ir::Stmt& s) { return PrefetchInjector().mutate(s); }

}  // namespace kiln::passes
