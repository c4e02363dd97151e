// FoldConstant: an operator whose inputs are all constants is evaluated now (by the
// reference interpreter on the lowered op) and replaced by a constant.
#include "compiler/graph/lower_group.h"
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

Graph fold_constant(const Graph& old) {
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    NodeId nid = rw.copy(id);
    if (n.is_constant()) continue;
    bool all_const = true;
    for (NodeId i : rw.graph().node(nid).inputs) all_const = all_const && rw.graph().node(i).is_constant();
    if (all_const) rw.set(id, rw.graph().add_constant(n.name, evaluate_op(rw.graph(), nid)));
  }
  // The evaluated operator nodes are left unused; drop them.
  return dead_code_elimination(rw.finish());
}

}  // namespace kiln::graph
