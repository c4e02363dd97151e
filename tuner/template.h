#pragma once
// Templates: a schedule with knobs for one kind of workload on one target, kept in a
// registry keyed by name ("matmul.cpu", "conv2d_nchwc.cpu"). The tuner asks the
// registry for the templates of a workload's op and target; a backend adds its own
// by registering them (and, for a new target, a measure function: measure.h), as
// backend-vta will for its conv2d and dense strategies ("conv2d.vta", measured in
// cycles on the rtl device). See docs/tuning.md, "Adding templates".
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/graph/lower_group.h"
#include "compiler/schedule/lower.h"
#include "tuner/space.h"
#include "tuner/workload.h"

namespace kiln::tuner {

struct Template {
  std::string name;    // unique: "<op>.<target>"
  std::string op;      // the Workload::op it serves
  std::string target;  // the measure function that times its candidates ("cpu")
  // The knobs for one workload.
  std::function<ConfigSpace(const Workload&)> space;
  // Schedules the anchor stage of the workload's operator with one configuration
  // (graph::AnchorStage: the stage, the schedule, the node). Used both when a
  // candidate is lowered for tuning and when a record is applied at compile time.
  std::function<void(const graph::AnchorStage&, const Workload&, const Config&)> apply;
  // Lowers one candidate. Left empty, the default lowers the workload's one-node
  // graph (workload_graph) through graph::lower_group with `apply` as the hook, so a
  // candidate is exactly the kernel the compiler would make. A backend whose
  // candidates are not loop IR functions of that graph (VTA) provides its own.
  std::function<std::vector<schedule::LoweredFunc>(const Workload&, const Config&)> lower;
  // The configuration that schedules the workload as the compiler's default does on a
  // machine (what `kiln run` does there without records: the traits of the target the
  // candidates are built for, machine_traits), or -1 where no configuration of the
  // space does; tune() measures it first. Left empty: the default is not in the space.
  std::function<int64_t(const Workload&, const target::MachineTraits&)> default_config;
};

// Registers (or replaces) a template. The built-in CPU templates are registered on
// first use of the registry.
void register_template(Template t);
// The template of that name; std::invalid_argument listing the known ones otherwise.
const Template& find_template(const std::string& name);
// The templates for a workload's op on a target ("cpu"), in registration order.
std::vector<const Template*> templates_for(const std::string& op, const std::string& target);
std::vector<std::string> template_names();

// The machine a target string's kernels are scheduled for: its backend's traits ("cpu"
// the host CPU's, "llvm -mcpu=haswell" that CPU's, "opencl" a GPU's; "" the host CPU's
// where the CPU backend is registered, else none).
target::MachineTraits machine_traits(const std::string& target);

// Calls `visit` with the anchor stage of the workload's one-node graph and `machine`:
// what the compiler's default schedule of it reads (for Template::default_config).
void visit_default_anchor(const Workload& w, const target::MachineTraits& machine,
                          const std::function<void(const te::Tensor&, const target::MachineTraits&)>& visit);

// A candidate's lowered functions (Template::lower, or the default: the stages a
// template leaves to the compiler, a Winograd convolution's transforms, scheduled for
// `machine`, as in a model compiled for it). Without `machine`: the host CPU's where
// the CPU backend is registered.
std::vector<schedule::LoweredFunc> lower_candidate(const Template& t, const Workload& w, const Config& c,
                                                   const target::MachineTraits& machine);
std::vector<schedule::LoweredFunc> lower_candidate(const Template& t, const Workload& w, const Config& c);

// Built-in CPU templates (cpu_templates.cc).
void register_cpu_templates();
// Built-in GPU templates (gpu_templates.cc): conv2d_nchw, dense and matmul for each GPU
// target ("opencl", "cuda"), measured on that target's device.
void register_gpu_templates();

}  // namespace kiln::tuner
