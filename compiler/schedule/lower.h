#pragma once
// lower(): from a schedule to loop IR, as a list of passes (see lower.cc).
#include <string>
#include <vector>

#include "compiler/ir/node.h"
#include "compiler/schedule/schedule.h"

namespace kiln::schedule {

// A lowered function: its arguments (placeholders and outputs, in the order given)
// and a flat loop-IR body over their buffers' data variables.
struct LoweredFunc {
  std::string name;
  std::vector<ir::Buffer> args;
  ir::Stmt body;
};

LoweredFunc lower(const Schedule& s, const std::vector<te::Tensor>& args, const std::string& name = "main");

}  // namespace kiln::schedule
