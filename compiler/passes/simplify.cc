#include "compiler/passes/simplify.h"

#include "compiler/ir/analyzer.h"

namespace kiln::passes {

ir::Stmt simplify(const ir::Stmt& s) {
  ir::Analyzer an;
  return an.simplify(s);
}

}  // namespace kiln::passes
