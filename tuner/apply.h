#pragma once
// Applying records at compile time: a graph::ScheduleHook that schedules every anchor
// stage (conv2d_nchwc, dense, 2-d matmul) with the best record of its workload, and
// warns, once per workload, about each anchor that has none (it keeps the default
// schedule).
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "compiler/graph/lower_group.h"
#include "tuner/records.h"

namespace kiln::tuner {

struct ApplyStats {
  std::set<std::string> applied;  // workload keys scheduled from a record
  std::set<std::string> missing;  // workload keys without a record (warned about)
};

// `warn`: where the warnings go (stderr in kiln). `stats` (optional) is filled as
// kernels are lowered.
graph::ScheduleHook records_hook(const std::string& records_path, std::ostream& warn, ApplyStats* stats = nullptr,
                                 const std::string& target = "cpu");

// The anchor workloads of a graph as compile() would lower them: (workload, node name).
// Used by `kiln tune MODEL.onnx` to find what to tune.
std::vector<std::pair<Workload, std::string>> model_workloads(const graph::Graph& g);

}  // namespace kiln::tuner
