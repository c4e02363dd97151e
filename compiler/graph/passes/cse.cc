// Common-subexpression elimination: nodes with the same op, the same (already
// deduplicated) inputs and the same attributes are computed once; constants with the
// same type and bytes are stored once.
#include <cstring>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "compiler/graph/passes/passes.h"

namespace kiln::graph {

namespace {

std::string_view bytes_of(const Node& n) {
  return {reinterpret_cast<const char*>(n.value->data()), static_cast<size_t>(n.type.size() * n.type.dtype.storage_bytes())};
}

}  // namespace

Graph common_subexpression_elimination(const Graph& old) {
  GraphRewriter rw(old);
  // Operators: (op, inputs) -> candidates, compared by attributes.
  std::map<std::pair<std::string, std::vector<NodeId>>, std::vector<NodeId>> ops;
  std::unordered_multimap<std::string_view, NodeId> consts;  // by content
  for (NodeId id = 0; id < old.size(); ++id) {
    const Node& n = old.node(id);
    if (n.is_input()) continue;
    if (n.is_constant()) {
      NodeId found = -1;
      auto [lo, hi] = consts.equal_range(bytes_of(n));
      for (auto it = lo; it != hi && found < 0; ++it)
        if (rw.graph().type(it->second) == n.type) found = it->second;
      if (found >= 0) {
        rw.set(id, found);
      } else {
        NodeId c = rw.copy(id);
        consts.emplace(bytes_of(rw.graph().node(c)), c);
      }
      continue;
    }
    auto& cands = ops[{n.op, rw.mapped_inputs(id)}];
    NodeId found = -1;
    for (NodeId c : cands)
      if (rw.graph().node(c).attrs == n.attrs) found = c;
    if (found >= 0) {
      rw.set(id, found);
    } else {
      cands.push_back(rw.copy(id));
    }
  }
  return rw.finish();
}

}  // namespace kiln::graph
