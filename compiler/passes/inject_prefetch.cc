#include "compiler/passes/inject_prefetch.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln::passes {

namespace {

// Stage::pragma(iv, "prefetch", tensor(indices)) wraps iv's loop in
// attr pragma_prefetch = Load (one attr per pragma, stacked); each load's element is
// fetched into cache at the start of every iteration (its indices may use the loop's
// variable).
class PrefetchInjector : public ir::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  ir::Stmt mutate_(const ir::AttrNode* op, const ir::Stmt& self) override {
    if (op->key != "pragma_prefetch") return IRMutator::mutate_(op, self);
    std::vector<ir::Stmt> fetches;
    const ir::AttrNode* a = op;
    for (;;) {
      const auto* load = a->value.as<ir::LoadNode>();
      if (!load || load->dtype.lanes() != 1) {
        throw CompileError("inject_prefetch: a prefetch pragma needs one element of a tensor; found " + ir::to_string(a->value));
      }
      fetches.push_back(ir::make_evaluate(ir::make_call(ir::DataType::Int(32), "prefetch", {a->value})));
      const auto* next = a->body.as<ir::AttrNode>();
      if (!next || next->key != "pragma_prefetch") break;
      a = next;
    }
    const auto* loop = a->body.as<ir::ForNode>();
    if (!loop) throw CompileError("inject_prefetch: a prefetch pragma is not on a loop: " + ir::to_string(a->body));
    fetches.push_back(mutate(loop->body));
    return ir::make_for(loop->var, loop->min, loop->extent, loop->for_kind, ir::make_seq(std::move(fetches)), loop->thread_tag);
  }
};

}  // namespace

ir::Stmt inject_prefetch(const ir::Stmt& s) { return PrefetchInjector().mutate(s); }

}  // namespace kiln::passes
