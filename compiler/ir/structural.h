#pragma once
// Structural equality and hashing. Free variables are equal only to themselves;
// variables bound inside the compared trees (loop, let, allocate variables) are
// matched by position, so two loops that differ only in the loop variable's name are
// equal. hash(a) == hash(b) whenever equal(a, b).
#include <cstddef>

#include "compiler/ir/node.h"

namespace kiln::ir {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
size_t structural_hash(const Expr& e);
size_t structural_hash(const Stmt& s);

struct StructuralHash {
  size_t operator()(const Expr& e) const { return structural_hash(e); }
};
struct StructuralEqual {
  bool operator()(const Expr& a, const Expr& b) const { return structural_equal(a, b); }
};

}  // namespace kiln::ir
