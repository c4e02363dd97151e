#pragma once
// Small helpers every pass uses: substitution and variable queries.
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/node.h"

namespace kiln::ir {

using VarMap = std::unordered_map<const VarNode*, Expr>;

Expr substitute(const Expr& e, const VarMap& map);
Stmt substitute(const Stmt& s, const VarMap& map);
Expr substitute(const Expr& e, const Var& v, const Expr& value);
Stmt substitute(const Stmt& s, const Var& v, const Expr& value);

// True if `e` mentions any variable for which `pred` holds.
bool uses_var(const Expr& e, const std::function<bool(const VarNode*)>& pred);
bool uses_var(const Stmt& s, const std::function<bool(const VarNode*)>& pred);
bool uses_var(const Expr& e, const Var& v);
bool uses_var(const Stmt& s, const Var& v);

// The variables `e` mentions, in first-use order.
std::vector<Var> free_vars(const Expr& e);

// Lane reductions: the intrinsic calls vector_reduce_add, vector_reduce_max and
// vector_reduce_min take one vector of 2^n lanes and return a scalar of its element
// type, the lanes combined as a tree: the low half with the high half, lane by lane,
// until one lane is left. Every backend and the interpreter combine in that order, so
// a float sum is the same everywhere (and differs from a serial sum in rounding only).
// The binary operation a call's name stands for, or nothing for another name.
std::optional<NodeKind> lane_reduction_kind(const std::string& call_name);
// The call's name for Add, Max or Min.
std::string lane_reduction_name(NodeKind kind);

}  // namespace kiln::ir
