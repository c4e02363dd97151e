#include "compiler/graph/executor.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "compiler/graph/op.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/support/debug.h"
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
    // Named after the group's anchor (its heaviest op) and its last op: k3_conv2d_nchwc_relu.
    const Node& root = g.node(groups[k].root());
    NodeId anchor = groups[k].nodes.front();
    for (NodeId id : groups[k].nodes)
      if (op_def(g.node(id).op).pattern > op_def(g.node(anchor).op).pattern) anchor = id;
    std::string name = g.node(anchor).op == root.op ? fmt::format("k{}_{}", k, root.op)
                                                    : fmt::format("k{}_{}_{}", k, g.node(anchor).op, root.op);
    if (debug_enabled("graph")) {
      std::vector<std::string> ids;
      for (NodeId id : groups[k].nodes) ids.push_back("%" + std::to_string(id));
      std::cerr << "// kernel " << name << ": " << fmt::format("{}", fmt::join(ids, " ")) << "\n";
    }
    m.kernels.push_back(lower_group(g, groups[k].nodes, name, {}, options.schedule_hook));
    io.push_back(KernelIO{m.kernels.back().inputs, m.kernels.back().outputs});
  }
  m.memory = plan_memory(g, io);
  return m;
}

std::vector<target::KernelSignature> ExecPlan::signatures() const {
  std::vector<target::KernelSignature> r;
  for (const auto& k : kernels) r.push_back({k.name, static_cast<int>(k.args.size())});
  return r;
}

namespace {

int64_t bytes_of(const TensorType& t) { return t.size() * t.dtype.storage_bytes(); }

uint8_t* aligned_bytes(int64_t n) {
  size_t size = static_cast<size_t>((std::max<int64_t>(n, 1) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, size);
  if (!p) throw CompileError(fmt::format("out of memory allocating {} bytes", size));
  std::memset(p, 0, size);
  return static_cast<uint8_t*>(p);
}

}  // namespace

ExecPlan make_plan(const CompiledModel& m) {
  const Graph& g = m.graph;
  ExecPlan p;
  for (int64_t b : m.memory.storage_bytes) p.buffers.push_back({b, nullptr});
  std::vector<int> buffer_of(m.memory.storage_of);
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (!n.is_constant()) continue;
    // Constants have buffers of their own, filled once.
    auto init = std::make_shared<std::string>(reinterpret_cast<const char*>(n.value->data()), bytes_of(n.type));
    buffer_of[id] = static_cast<int>(p.buffers.size());
    p.buffers.push_back({bytes_of(n.type), std::move(init)});
  }
  auto buffer = [&](NodeId id) {
    if (buffer_of.at(id) < 0) throw CompileError("executor: node '" + g.node(id).name + "' has no storage");
    return buffer_of[id];
  };
  for (NodeId i : g.inputs()) p.inputs.push_back({g.node(i).name, g.type(i), buffer(i)});
  for (size_t k = 0; k < g.outputs().size(); ++k)
    p.outputs.push_back({g.output_names()[k], g.type(g.outputs()[k]), buffer(g.outputs()[k])});
  for (const auto& k : m.kernels) {
    ExecPlan::Kernel pk{k.func.name, {}};
    for (NodeId i : k.inputs) pk.args.push_back(buffer(i));
    for (NodeId o : k.outputs) pk.args.push_back(buffer(o));
    p.kernels.push_back(std::move(pk));
  }
  return p;
}

Executor::Executor(ExecPlan plan, std::unique_ptr<target::KernelModule> kernels)
    : plan_(std::move(plan)), kernels_(std::move(kernels)) {
  std::vector<void*> ptr;
  for (const auto& b : plan_.buffers) {
    blocks_.emplace_back(aligned_bytes(b.bytes), std::free);
    if (b.init) std::memcpy(blocks_.back().get(), b.init->data(), b.init->size());
    ptr.push_back(blocks_.back().get());
  }
  for (const auto& k : plan_.kernels) {
    std::vector<void*> a;
    for (int b : k.args) a.push_back(ptr.at(b));
    args_.push_back(std::move(a));
  }
}

Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;

void Executor::set_input(size_t k, const void* data, int64_t bytes) {
  const auto& in = plan_.inputs.at(k);
  if (bytes != bytes_of(in.type))
    throw CompileError(fmt::format("input {} ('{}', {}) takes {} bytes, got {}", k, in.name, in.type.to_string(),
                                   bytes_of(in.type), bytes));
  std::memcpy(blocks_.at(in.buffer).get(), data, static_cast<size_t>(bytes));
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

const void* Executor::output(size_t k) const { return blocks_.at(plan_.outputs.at(k).buffer).get(); }
int64_t Executor::output_bytes(size_t k) const { return bytes_of(output_type(k)); }

Executor make_executor(const CompiledModel& m, const std::string& backend, const std::string& target) {
  std::vector<schedule::LoweredFunc> funcs;
  for (const auto& k : m.kernels) funcs.push_back(k.func);
  return Executor(make_plan(m), target::make_backend(backend)->build(funcs, target));
}

}  // namespace kiln::graph
