#include "compiler/graph/executor.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "compiler/graph/passes/passes.h"
#include "compiler/support/error.h"

namespace kiln::graph {

CompiledModel compile(const Graph& input, const CompileOptions& options) {
  CompiledModel m;
  m.graph = options.optimize ? optimize(input) : input;
  const Graph& g = m.graph;
  std::vector<FusedGroup> groups;
  if (options.fuse) {
    groups = fuse_ops(g);
  } else {
    for (NodeId id = 0; id < g.size(); ++id)
      if (!g.node(id).is_input() && !g.node(id).is_constant()) groups.push_back(FusedGroup{{id}});
  }
  std::vector<KernelIO> io;
  for (size_t k = 0; k < groups.size(); ++k) {
    const Node& root = g.node(groups[k].root());
    m.kernels.push_back(lower_group(g, groups[k].nodes, fmt::format("k{}_{}", k, root.op)));
    io.push_back(KernelIO{m.kernels.back().inputs, m.kernels.back().outputs});
  }
  m.memory = plan_memory(g, io);
  return m;
}

namespace {

uint8_t* aligned_bytes(int64_t n) {
  size_t size = static_cast<size_t>((n + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, size);
  if (!p) throw CompileError(fmt::format("out of memory allocating {} bytes", size));
  std::memset(p, 0, size);
  return static_cast<uint8_t*>(p);
}

int64_t bytes_of(const TensorType& t) { return t.size() * t.dtype.storage_bytes(); }

}  // namespace

Executor::Executor(std::shared_ptr<const CompiledModel> model, const std::string& backend, const std::string& target)
    : model_(std::move(model)) {
  const Graph& g = model_->graph;
  std::vector<schedule::LoweredFunc> funcs;
  for (const auto& k : model_->kernels) funcs.push_back(k.func);
  kernels_ = target::make_backend(backend)->build(funcs, target);

  node_ptr_.assign(g.size(), nullptr);
  std::vector<void*> storage;
  for (int64_t b : model_->memory.storage_bytes) {
    blocks_.emplace_back(aligned_bytes(b), std::free);
    storage.push_back(blocks_.back().get());
  }
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.is_constant()) {
      // Constants are copied into aligned storage of their own.
      blocks_.emplace_back(aligned_bytes(bytes_of(n.type)), std::free);
      std::memcpy(blocks_.back().get(), n.value->data(), static_cast<size_t>(bytes_of(n.type)));
      node_ptr_[id] = blocks_.back().get();
    } else if (model_->memory.storage_of[id] >= 0) {
      node_ptr_[id] = storage[model_->memory.storage_of[id]];
    }
  }
  // A graph output that is an input or a constant is copied there once per run.
  for (const auto& k : model_->kernels) {
    std::vector<void*> a;
    for (NodeId i : k.inputs) a.push_back(storage_of(i));
    for (NodeId o : k.outputs) a.push_back(storage_of(o));
    args_.push_back(std::move(a));
  }
}

Executor::~Executor() = default;

void* Executor::storage_of(NodeId id) const {
  void* p = node_ptr_.at(id);
  if (!p) throw CompileError("executor: node '" + model_->graph.node(id).name + "' has no storage");
  return p;
}

const TensorType& Executor::input_type(size_t k) const { return model_->graph.type(model_->graph.inputs().at(k)); }
const TensorType& Executor::output_type(size_t k) const { return model_->graph.type(model_->graph.outputs().at(k)); }

void Executor::set_input(size_t k, const void* data, int64_t bytes) {
  const TensorType& t = input_type(k);
  if (bytes != bytes_of(t))
    throw CompileError(fmt::format("input {} ('{}', {}) takes {} bytes, got {}", k, model_->graph.node(model_->graph.inputs()[k]).name,
                                   t.to_string(), bytes_of(t), bytes));
  std::memcpy(storage_of(model_->graph.inputs()[k]), data, static_cast<size_t>(bytes));
}

void Executor::run() {
  for (size_t k = 0; k < args_.size(); ++k) kernels_->call(k, args_[k].data());
}

std::vector<double> Executor::run_profiled() {
  std::vector<double> ms;
  for (size_t k = 0; k < args_.size(); ++k) {
    auto t0 = std::chrono::steady_clock::now();
    kernels_->call(k, args_[k].data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

const void* Executor::output(size_t k) const { return storage_of(model_->graph.outputs().at(k)); }
int64_t Executor::output_bytes(size_t k) const { return bytes_of(output_type(k)); }

}  // namespace kiln::graph
