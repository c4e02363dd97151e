// Dead-code elimination: only the nodes the outputs depend on are kept (graph inputs
// always stay, so the model's signature does not change).
#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

Graph dead_code_elimination(const Graph& old) {
  std::vector<bool> live(old.size(), false);
  for (NodeId o : old.outputs()) live[o] = true;
  for (NodeId id = old.size(); id-- > 0;)
    if (live[id])
      for (NodeId i : old.node(id).inputs) live[i] = true;
  GraphRewriter rw(old);
  for (NodeId id = 0; id < old.size(); ++id)
    if (live[id] && !old.node(id).is_input()) rw.copy(id);
  return rw.finish();
}

}  // namespace kiln::graph
