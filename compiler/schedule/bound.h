#pragma once
// Bound inference: for every stage, the range of each axis. An output covers its
// whole domain; any other stage covers what its consumers read of it, for one
// iteration of the loops it is computed inside (compute_at) or for the whole program
// (compute_root). Also checks that compute_at requests can hold.
#include <unordered_map>
#include <vector>

#include "compiler/ir/analyzer.h"
#include "compiler/schedule/message_passing.h"
#include "compiler/schedule/schedule.h"

namespace kiln::schedule {

struct Bounds {
  DomMap dom;                                                     // every axis of every live stage
  std::unordered_map<const StageNode*, std::vector<ir::Range>> region;  // the realized region
  std::unordered_map<const StageNode*, bool> live;                // reachable from an output
  // Conditions on a stage's own axes where its region reaches past its domain: a stage
  // computed at a split that does not divide (a register tile of 8 on a row of 109)
  // keeps the split's constant extent, so it can be unrolled, and computes only where
  // these hold (`likely`, so loop partitioning leaves them to the last tile).
  std::unordered_map<const StageNode*, std::vector<ir::Expr>> within_domain;
  ir::Analyzer analyzer;                                          // knows the const bounds of every axis
};

void infer_bound(const Schedule& s, Bounds* out);

// The leaf axes of the loops around a stage's computation, outermost first.
std::vector<IterVar> enclosing_leaves(const StageNode* stage);

}  // namespace kiln::schedule
