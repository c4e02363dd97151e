#pragma once
// Moving facts along a stage's split/fuse relations: ranges flow down from the root
// axes to the leaves, values flow up from the leaf loop variables to the root axes.
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/analyzer.h"
#include "compiler/schedule/schedule.h"

namespace kiln::schedule {

using DomMap = std::unordered_map<const ir::IterVarNode*, ir::Range>;
using ValueMap = std::unordered_map<const ir::IterVarNode*, Expr>;

// Ranges of split/fused axes from the ranges of their parents (binds them in `an`).
void pass_down_domain(const StageNode* stage, DomMap* dom, ir::Analyzer* an);

// Every loop runs from 0: a leaf axis whose range starts at m is (loop var + m).
ir::Range loop_range(const DomMap& dom, const IterVar& leaf);
Expr leaf_value(const DomMap& dom, const IterVar& leaf, const Expr& loop_var);

// Value of every axis given the values of the leaf axes (missing leaves: their
// loop variable, offset by the leaf's min).
ValueMap pass_up_values(const StageNode* stage, const DomMap& dom, ValueMap leaf_values);

// Conditions that keep the leaf loops inside each split axis's range (only for splits
// that are not proven to divide evenly). `only_data_par` skips reduction axes.
std::vector<Expr> split_predicates(const StageNode* stage, const DomMap& dom, const ValueMap& values, ir::Analyzer* an,
                                   bool only_data_par = false);

// The leaf axes that `iv` was split or fused into (itself if it is a leaf).
std::unordered_set<const ir::IterVarNode*> descendant_leaves(const StageNode* stage, const IterVar& iv);

}  // namespace kiln::schedule
