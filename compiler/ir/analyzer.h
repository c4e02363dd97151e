#pragma once
// Arithmetic analysis of integer index expressions: constant bounds from the ranges
// of the variables in scope, a simplifier (constant folding, canonical linear forms,
// floor div/mod rules, min/max and comparison elimination) and the proofs lowering
// needs (a split divides evenly, an access stays in bounds).
#include <cstdint>
#include <limits>
#include <unordered_map>

#include "compiler/ir/node.h"

namespace kiln::ir {

struct ConstBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;
  bool is_const() const { return min == max && min != kNegInf && min != kPosInf; }
};

class Analyzer {
 public:
  // Declares that v lies in [range.min, range.min + range.extent) (bounds of the range
  // expressions are used when they are not constant).
  void bind(const Var& v, const Range& range);
  void bind(const Var& v, int64_t min, int64_t max);
  void bind(const Var& v, ConstBound b);
  void unbind(const Var& v);

  ConstBound const_bound(const Expr& e);

  Expr simplify(const Expr& e);
  // Simplifies every expression of a statement, binding loop variables as it goes.
  Stmt simplify(const Stmt& s);

  bool can_prove(const Expr& cond);
  bool can_prove_equal(const Expr& a, const Expr& b);
  // e is a multiple of `factor` for every value of its variables.
  bool can_prove_divisible(const Expr& e, int64_t factor);

 private:
  friend class Simplifier;
  std::unordered_map<const VarNode*, ConstBound> bounds_;
};

// Simplifies with no knowledge about variables.
Expr simplify(const Expr& e);
Stmt simplify(const Stmt& s);

}  // namespace kiln::ir
