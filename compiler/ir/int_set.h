#pragma once
// Symbolic integer intervals [min, max] (inclusive) used by bound inference: the set
// of values an index takes when some variables sweep their ranges.
#include <unordered_map>

#include "compiler/ir/analyzer.h"
#include "compiler/ir/node.h"

namespace kiln::ir {

struct IntSet {
  Expr min;  // undefined: unbounded below
  Expr max;  // undefined: unbounded above
  static IntSet point(const Expr& e) { return {e, e}; }
  static IntSet interval(const Expr& lo, const Expr& hi) { return {lo, hi}; }
  static IntSet everything() { return {}; }
  static IntSet from_range(const Range& r);
  bool bounded() const { return min.defined() && max.defined(); }
};

using IntSetMap = std::unordered_map<const VarNode*, IntSet>;

// The set of values of `e` when each variable in `dom` ranges over its set.
IntSet eval_int_set(const Expr& e, const IntSetMap& dom, Analyzer* analyzer);
// Smallest interval holding both.
IntSet union_int_set(const IntSet& a, const IntSet& b, Analyzer* analyzer);

}  // namespace kiln::ir
