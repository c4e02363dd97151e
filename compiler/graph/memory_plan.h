#pragma once
// Memory planning: every tensor a kernel writes gets a slot of a storage pool; slots
// whose tensors are dead (no later kernel reads them) are reused for later tensors of
// the same or smaller size (best fit). Graph inputs and outputs get storage of their
// own so a caller can read the outputs after a run. A tensor that only an
// accelerator's kernels write and read is in the accelerator's space and shares
// storage only with such tensors, so that it can live in the accelerator's memory.
// A view (a reshape that no kernel computes) shares its source's storage, which lives
// as long as either is read.
#include <cstdint>
#include <vector>

#include "compiler/graph/graph.h"

namespace kiln::graph {

struct MemoryPlan {
  std::vector<int> storage_of;          // per node: index into storage_bytes, or -1
  std::vector<int64_t> storage_bytes;   // size of each storage block
  int64_t total_bytes() const;
  // What the graph would need without reuse (one block per tensor).
  int64_t unshared_bytes = 0;
};

// `kernels[k]`: the nodes kernel k reads (its inputs) and the nodes it writes.
struct KernelIO {
  std::vector<NodeId> reads;
  std::vector<NodeId> writes;
  bool accelerator = false;  // the kernel runs on the accelerator
};
// `view_of`: per node, the node whose storage it shares, or -1 (empty: no views). A
// view's source is computed by a kernel or is a graph input; a view is no graph output.
MemoryPlan plan_memory(const Graph& g, const std::vector<KernelIO>& kernels, const std::vector<NodeId>& view_of = {});

}  // namespace kiln::graph
