#pragma once
// Compiling a graph into kernels and running them. compile() optimizes the graph,
// partitions it with FuseOps, lowers each group to one function (default schedule)
// and plans memory. An ExecPlan is what running needs and nothing more: buffers
// (constants with their contents), the kernels with their argument buffers, the
// inputs and outputs. An Executor runs a plan with kernels a backend from the
// registry (compiler/target) built, or loaded from a saved model file.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "compiler/graph/lower_group.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/strategy.h"
#include "compiler/target/backend.h"
#include "compiler/target/target.h"

namespace kiln::graph {

struct CompileOptions {
  bool optimize = true;  // run optimize() first
  bool fuse = true;      // FuseOps; otherwise one kernel per operator
  // Schedules anchor stages instead of the default (lower_group.h); the tuner's
  // records provide one (tuner/apply.h).
  ScheduleHook schedule_hook = {};  // "= {}": {optimize, fuse} initializers stay warning-free
  // What to compile for: "cpu" (everything on the host), or an accelerator whose
  // strategy (strategy.h) places what it can and leaves the rest to the host.
  target::Target target = {};
  // Tuned knobs for the accelerator's nodes (strategy.h); the tuner's records provide one.
  KnobHook knob_hook = {};
};

struct CompiledModel {
  Graph graph;                        // the optimized (and placed) graph
  std::vector<LoweredGroup> kernels;  // in execution order
  MemoryPlan memory;
  target::Target target;              // resolved (an accelerator's fingerprint filled in)
  std::vector<Placement> placement;   // where each candidate operator went, and why
};

CompiledModel compile(const Graph& g, const CompileOptions& options = {});

struct ExecPlan {
  struct Buffer {
    int64_t bytes = 0;
    std::shared_ptr<const std::string> init;  // a constant's contents, else null
  };
  struct Tensor {
    std::string name;
    TensorType type;
    int buffer = -1;
  };
  struct Kernel {
    std::string name;
    std::vector<int> args;  // buffers, in the function's argument order
    bool on_accelerator = false;  // built by the accelerator's backend, not the host's
  };
  std::string accelerator;  // the accelerator's target string, empty for the host alone
  std::vector<Buffer> buffers;
  std::vector<Tensor> inputs, outputs;
  std::vector<Kernel> kernels;

  // The signatures of the host's kernels, or of the accelerator's, each in plan order.
  std::vector<target::KernelSignature> signatures(bool accelerator = false) const;
};

ExecPlan make_plan(const CompiledModel& m);

class Executor {
 public:
  // `accelerator`: the kernels marked on_accelerator, in plan order (null when none).
  Executor(ExecPlan plan, std::unique_ptr<target::KernelModule> kernels,
           std::unique_ptr<target::KernelModule> accelerator = nullptr);
  ~Executor();
  Executor(Executor&&) noexcept;

  const ExecPlan& plan() const { return plan_; }
  const target::KernelModule& kernels() const { return *kernels_; }
  // The accelerator's kernels, or null.
  const target::KernelModule* accelerator() const { return accel_.get(); }
  size_t num_inputs() const { return plan_.inputs.size(); }
  size_t num_outputs() const { return plan_.outputs.size(); }
  const TensorType& input_type(size_t k) const { return plan_.inputs.at(k).type; }
  const TensorType& output_type(size_t k) const { return plan_.outputs.at(k).type; }
  // Copies `bytes` (the size of input k's type) into input k.
  void set_input(size_t k, const void* data, int64_t bytes);
  void run();
  // Runs and returns each kernel's time in milliseconds, in kernel order.
  std::vector<double> run_profiled();
  const void* output(size_t k) const;
  int64_t output_bytes(size_t k) const;

 private:
  ExecPlan plan_;
  std::unique_ptr<target::KernelModule> kernels_, accel_;
  std::vector<std::pair<const target::KernelModule*, size_t>> calls_;  // per kernel: module, index
  std::vector<std::unique_ptr<uint8_t, void (*)(void*)>> blocks_;
  std::vector<std::vector<void*>> args_;
};

// What the accelerator's kernels measured in their last calls (KernelModule::stats),
// beside each kernel's time: per kernel and in total, and the host kernels' time.
struct AcceleratorReport {
  struct Layer {
    std::string kernel;
    double ms = 0;  // wall time of the call (a simulation's, on a simulated device)
    std::map<std::string, double> values;
  };
  std::vector<Layer> layers;
  double cycles = 0, ideal_cycles = 0, dram_bytes = 0;
  double host_bytes = 0;  // copied between the host and the accelerator's memory
  double accelerator_ms = 0, host_ms = 0;
  double utilization() const { return cycles > 0 ? ideal_cycles / cycles : 0; }
};
// `kernel_ms`: each plan kernel's time of the same run (run_profiled()).
AcceleratorReport accelerator_report(const Executor& ex, const std::vector<double>& kernel_ms);

// Builds a compiled model's host kernels with a registered backend ("interp", "cpu")
// and `target` (its target string), and the accelerator's kernels with the backend
// of the model's target.
Executor make_executor(const CompiledModel& m, const std::string& backend, const std::string& target = "");
// The same with the host of the model's target (Target::host_target): its backend and
// target string ("cpu" for `cpu`, the LLVM string for `llvm ...`, the interpreter for
// `interp`, an accelerator's -host).
Executor make_executor(const CompiledModel& m);

// A compiled model in one file: the plan, the constants and the backend's saved
// kernels (for the CPU backend a shared library). Loading needs the backend, not the
// compiler: nothing is lowered or code-generated again.
void save_model(const std::string& path, const Executor& ex, const std::string& backend, const std::string& target);
Executor load_model(const std::string& path);

}  // namespace kiln::graph
