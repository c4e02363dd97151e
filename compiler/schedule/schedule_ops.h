#pragma once
// From a schedule to a loop nest: every stage becomes its loops (leaf axes in order,
// annotated), producers are realized around the loop they are computed at, reductions
// get an initialization before their first reduction loop, and splits that do not
// divide evenly guard the body with likely(...) conditions.
#include <unordered_map>

#include "compiler/ir/node.h"
#include "compiler/schedule/bound.h"
#include "compiler/schedule/schedule.h"

namespace kiln::schedule {

struct ScheduledBody {
  ir::Stmt body;
  std::unordered_map<const StageNode*, ir::Buffer> buffers;  // one per live stage
};

ScheduledBody schedule_ops(const Schedule& s, Bounds* bounds);

}  // namespace kiln::schedule
