#pragma once
// Small helpers every pass uses: substitution and variable queries.
#include <functional>
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

}  // namespace kiln::ir
