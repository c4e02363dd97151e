#pragma once
// Compiling a graph into kernels and running them. compile() optimizes the graph,
// partitions it with FuseOps, lowers each group to one function (default schedule)
// and plans memory; an Executor builds the functions with a backend from the
// registry (compiler/target) and runs them in order on planned storage.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"
#include "compiler/graph/lower_group.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/target/backend.h"

namespace kiln::graph {

struct CompileOptions {
  bool optimize = true;  // run optimize() first
  bool fuse = true;      // FuseOps; otherwise one kernel per operator
};

struct CompiledModel {
  Graph graph;                        // the optimized graph: inputs, constants, outputs
  std::vector<LoweredGroup> kernels;  // in execution order
  MemoryPlan memory;
};

CompiledModel compile(const Graph& g, const CompileOptions& options = {});

class Executor {
 public:
  // `backend`: a registered backend ("interp", "cpu"); `target`: its options.
  Executor(std::shared_ptr<const CompiledModel> model, const std::string& backend, const std::string& target = "");
  ~Executor();

  const CompiledModel& model() const { return *model_; }
  size_t num_inputs() const { return model_->graph.inputs().size(); }
  size_t num_outputs() const { return model_->graph.outputs().size(); }
  const TensorType& input_type(size_t k) const;
  const TensorType& output_type(size_t k) const;
  // Copies `bytes` (input_type(k)'s size) into input k.
  void set_input(size_t k, const void* data, int64_t bytes);
  void run();
  // Runs and records each kernel's time (milliseconds), in kernel order.
  std::vector<double> run_profiled();
  const void* output(size_t k) const;
  int64_t output_bytes(size_t k) const;

 private:
  void* storage_of(NodeId id) const;
  std::shared_ptr<const CompiledModel> model_;
  std::unique_ptr<target::KernelModule> kernels_;
  struct Block;
  std::vector<std::unique_ptr<uint8_t, void (*)(void*)>> blocks_;
  std::vector<void*> node_ptr_;
  std::vector<std::vector<void*>> args_;
};

}  // namespace kiln::graph
