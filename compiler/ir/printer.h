#pragma once
// A readable printer for the loop IR (C-like, one statement a line).
#include <ostream>
#include <string>

#include "compiler/ir/node.h"

namespace kiln::ir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace kiln::ir
