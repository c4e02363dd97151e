#include "compiler/graph/memory_plan.h"

#include <algorithm>
#include <set>

namespace kiln::graph {

int64_t MemoryPlan::total_bytes() const {
  int64_t s = 0;
  for (int64_t b : storage_bytes) s += b;
  return s;
}

MemoryPlan plan_memory(const Graph& g, const std::vector<KernelIO>& kernels, const std::vector<NodeId>& view_of) {
  MemoryPlan p;
  // The tensor whose storage a node's is (itself, unless it is a view).
  auto source = [&](NodeId id) {
    while (id < static_cast<NodeId>(view_of.size()) && view_of[id] >= 0) id = view_of[id];
    return id;
  };
  p.storage_of.assign(g.size(), -1);
  auto bytes = [&](NodeId id) { return std::max<int64_t>(g.type(id).size() * g.type(id).dtype.storage_bytes(), 1); };
  std::set<NodeId> pinned(g.inputs().begin(), g.inputs().end());
  pinned.insert(g.outputs().begin(), g.outputs().end());
  for (NodeId id : pinned) {
    p.storage_of[id] = static_cast<int>(p.storage_bytes.size());
    p.storage_bytes.push_back(bytes(id));
  }
  std::vector<int> last_use(g.size(), -1);
  std::vector<bool> host(g.size(), false);  // some host kernel writes or reads it
  for (size_t k = 0; k < kernels.size(); ++k) {
    for (NodeId r : kernels[k].reads) {
      last_use[source(r)] = static_cast<int>(k);
      if (!kernels[k].accelerator) host[source(r)] = true;
    }
    for (NodeId w : kernels[k].writes)
      if (!kernels[k].accelerator) host[w] = true;
  }
  // Free blocks per space (0: the host's, 1: the accelerator's): (bytes, storage id).
  std::multiset<std::pair<int64_t, int>> free_space[2];
  std::vector<int> space_of_storage(p.storage_bytes.size(), 0);
  for (size_t k = 0; k < kernels.size(); ++k) {
    for (NodeId w : kernels[k].writes) {
      if (p.storage_of[w] >= 0) continue;
      int64_t need = bytes(w);
      p.unshared_bytes += need;
      int space = host[w] ? 0 : 1;
      auto& free_blocks = free_space[space];
      auto it = free_blocks.lower_bound({need, -1});
      if (it != free_blocks.end() && it->first <= 2 * need) {
        p.storage_of[w] = it->second;
        free_blocks.erase(it);
      } else if (!free_blocks.empty() && it == free_blocks.end()) {
        // Grow the largest free block rather than allocate a new one.
        auto last = std::prev(free_blocks.end());
        p.storage_of[w] = last->second;
        p.storage_bytes[last->second] = need;
        free_blocks.erase(last);
      } else {
        p.storage_of[w] = static_cast<int>(p.storage_bytes.size());
        p.storage_bytes.push_back(need);
        space_of_storage.push_back(space);
      }
    }
    // Tensors read for the last time here (and writes nobody reads) free their blocks.
    std::set<NodeId> done;
    for (NodeId r : kernels[k].reads)
      if (last_use[source(r)] == static_cast<int>(k)) done.insert(source(r));
    for (NodeId w : kernels[k].writes)
      if (last_use[w] < 0) done.insert(w);
    for (NodeId d : done)
      if (p.storage_of[d] >= 0 && !pinned.count(d) && !g.node(d).is_constant())
        free_space[space_of_storage[p.storage_of[d]]].insert({p.storage_bytes[p.storage_of[d]], p.storage_of[d]});
  }
  for (NodeId id : pinned) p.unshared_bytes += pinned.count(id) ? bytes(id) : 0;
  for (NodeId id = 0; id < static_cast<NodeId>(view_of.size()); ++id)
    if (view_of[id] >= 0) p.storage_of[id] = p.storage_of[source(id)];
  return p;
}

}  // namespace kiln::graph
