#pragma once
// Applying records at compile time: a graph::ScheduleHook that schedules every anchor
// stage (conv2d_nchwc, dense, 2-d matmul) with the best record of its workload, and
// warns, once per workload, about each anchor that has none (it keeps the default
// schedule).
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "compiler/graph/lower_group.h"
#include "compiler/graph/strategy.h"
#include "compiler/target/target.h"
#include "tuner/records.h"

namespace kiln::tuner {

struct ApplyStats {
  std::set<std::string> applied;  // workload keys scheduled from a record
  std::set<std::string> missing;  // workload keys without a record (warned about)
  // Workload keys whose best record the tuner measured less than kDefaultMargin faster
  // than the compiler's default schedule: they keep the default.
  std::set<std::string> kept_default;
};

// A record is applied where the tuner measured it at least this much faster than the
// default schedule (Template::default_config's record among the file's): a kernel that
// wins alone by less than the tuner's run-to-run spread can lose inside the model
// (MobileNetV2 at two threads: a 576 -> 96 convolution's record, 1-2% ahead alone, ran
// 3x slower between its neighbours).
inline constexpr double kDefaultMargin = 0.05;

// Where a workload has in-model records (in_model.h: its candidates timed inside the
// whole model, the default among them), records_hook chooses among those instead: the
// fastest applies where it ran at least this much faster there than the default did in
// the second timing: a margin against that timing's own noise, which the gains the step
// finds (1-3% of a model) are not far above.
inline constexpr double kInModelMargin = 0.02;

struct InModelPick {
  Record best;                          // the fastest in-model record
  std::optional<Record> default_record;  // the default schedule's, in the same runs
  bool applies = false;                 // best is not the default, and beat it by kInModelMargin
};
// The pick of every workload with in-model records among `records`, by key: those
// measured on `threads` threads (their detail's "threads"; 0: any), since a schedule
// that wins on one core can lose on two; the default is the default schedule on
// `machine` (the model's target's traits, tuner::machine_traits).
std::map<std::string, InModelPick> in_model_picks(const std::vector<Record>& records, const target::MachineTraits& machine,
                                                  const std::string& target = "cpu", int threads = 0);

// `warn`: where the warnings go (stderr in kiln). In-model records apply where they
// were measured on the threads the CPU backend runs on now. `stats` (optional) is filled as
// kernels are lowered.
graph::ScheduleHook records_hook(const std::string& records_path, std::ostream& warn, ApplyStats* stats = nullptr,
                                 const std::string& target = "cpu");

// The same for an accelerator's own nodes (graph::KnobHook): the best record of the
// node's workload among those of the template and the target's records key, as knobs in
// words. Warns once per workload without one. The template must be registered for the
// target's configuration (register_vta_templates) when the hook is asked.
graph::KnobHook knobs_hook(const std::string& records_path, std::ostream& warn, ApplyStats* stats = nullptr);

// The workloads of a graph as compile() for `target` would lower them: (workload, node
// name); the host's anchors for the CPU, the accelerator's nodes for an accelerator.
// Used by `kiln tune MODEL.onnx` to find what to tune.
std::vector<std::pair<Workload, std::string>> model_workloads(const graph::Graph& g, const target::Target& target = {});

}  // namespace kiln::tuner
