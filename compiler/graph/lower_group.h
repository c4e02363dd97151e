#pragma once
// From graph nodes to loop IR: a group of nodes (one fused kernel) becomes one tensor
// expression program with a default CPU schedule, lowered to one function whose
// arguments are the group's inputs (graph nodes outside the group) followed by its
// outputs. Constants of one element are embedded in the code as immediates.
#include <functional>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "compiler/schedule/lower.h"

namespace kiln::graph {

struct LoweredGroup {
  schedule::LoweredFunc func;
  std::vector<NodeId> inputs;   // graph nodes read by the group, in argument order
  std::vector<NodeId> outputs;  // graph nodes the group writes (after the inputs)
  bool on_accelerator = false;  // lowered by the target's strategy for its backend
};

// A schedule for one anchor stage that someone outside compiler/ provides (the
// tuner's records; compiler/ knows no tuner). Anchors are the reductions of
// conv2d_nchwc (not depthwise), dense and 2-d matmul nodes. The hook schedules
// `stage` (a root stage of `schedule`; its consumers are scheduled by default) and
// returns true, or returns false to keep the default schedule.
struct AnchorStage {
  const Graph& graph;
  NodeId node;                   // the operator node
  schedule::Schedule& schedule;  // the group's schedule
  te::Tensor stage;              // the reduction to schedule
};
using ScheduleHook = std::function<bool(const AnchorStage&)>;

// `nodes`: operator nodes of `g` in topological order. Outputs are the nodes used
// outside the group or as graph outputs (or the last node when `outputs` is empty).
LoweredGroup lower_group(const Graph& g, const std::vector<NodeId>& nodes, const std::string& name,
                         std::vector<NodeId> outputs = {}, const ScheduleHook& hook = {});

// Evaluates one operator on constant inputs with the reference interpreter
// (FoldConstant and the frontend's folding of shape arithmetic use it).
ConstData evaluate_op(const Graph& g, NodeId node);

}  // namespace kiln::graph
