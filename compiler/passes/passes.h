#pragma once
// Every pass of the loop IR, in the order lower() runs them (schedule/lower.cc).
// Each is a free function from a statement to a statement, in its own file.
#include <vector>

#include "compiler/ir/node.h"

namespace kiln::passes {

// Realize -> Allocate and multi-dimensional buffer accesses -> flat Load/Store.
ir::Stmt storage_flatten(const ir::Stmt& s, const std::vector<ir::Buffer>& args);
// Constant folding, canonical index arithmetic, dead branches, extent-1 loops.
ir::Stmt simplify(const ir::Stmt& s);
// pragma_prefetch loops -> a prefetch of the pragma's element at every iteration's start.
ir::Stmt inject_prefetch(const ir::Stmt& s);
// Splits loops so that likely(...) conditions are dropped where they always hold.
ir::Stmt loop_partition(const ir::Stmt& s);
// Vectorized loops -> ramps, broadcasts and vector loads/stores (else a serial loop).
ir::Stmt vectorize_loop(const ir::Stmt& s);
// Virtual threads -> interleaved copies of their bodies with per-thread buffers.
ir::Stmt inject_virtual_thread(const ir::Stmt& s);
// double_buffer_scope buffers -> two halves, the next fill overlapping this use.
ir::Stmt inject_double_buffer(const ir::Stmt& s);
// Unrolled loops -> a sequence of their bodies.
ir::Stmt unroll_loop(const ir::Stmt& s);
// Drops statements with no effect and allocations nobody uses.
ir::Stmt remove_no_op(const ir::Stmt& s);

}  // namespace kiln::passes
