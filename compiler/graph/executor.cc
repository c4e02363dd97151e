#include "compiler/graph/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "compiler/graph/op.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/support/error.h"
#include "support/debug.h"

namespace kiln::graph {

CompiledModel compile(const Graph& input, const CompileOptions& options) {
  CompiledModel m;
  std::unique_ptr<Strategy> strategy = make_strategy(options.target.kind());
  m.target = strategy ? strategy->resolve(options.target) : options.target;
  // The host's machine, for the default schedules (the interpreter's: the defaults).
  const target::MachineTraits machine = target::machine_of(m.target.host_target());
  m.graph = options.optimize ? optimize(input, machine) : input;
  if (strategy) {
    // Placement: what the accelerator computes becomes its own operators; the packing
    // of constant weights is folded right away.
    m.graph = strategy->place(m.graph, m.target, m.placement);
    m.graph = dead_code_elimination(fold_constant(m.graph));
    if (debug_enabled("graph")) std::cerr << "// after place (" << m.target.str() << ")\n" << m.graph;
  }
  // The host's int8 kernels take their weights in words (after placement, which needs
  // the plain layout).
  if (options.optimize && !machine.is_gpu()) {
    m.graph = alter_layout_int8(m.graph);
    if (debug_enabled("graph")) std::cerr << "// after alter_layout_int8 (" << m.graph.num_ops() << " ops)\n" << m.graph;
  }
  const Graph& g = m.graph;
  std::vector<FusedGroup> groups;
  if (options.fuse) {
    groups = fuse_ops(g);
    if (options.optimize && !machine.is_gpu()) {
      groups = fuse_depthwise_pointwise(g, std::move(groups));
      groups = fuse_slice_product(g, std::move(groups));
    }
  } else {
    for (NodeId id = 0; id < g.size(); ++id)
      if (!g.node(id).is_input() && !g.node(id).is_constant()) groups.push_back(FusedGroup{{id}});
  }
  std::vector<KernelIO> io;
  // A reshape alone in its group is a view: the same bytes, no kernel (BERT-base has 36,
  // each a copy of up to 1.5 MB). A graph output keeps storage of its own, so it is
  // copied.
  std::vector<NodeId> view_of(g.size(), -1);
  std::vector<bool> is_output(g.size(), false);
  for (NodeId o : g.outputs()) is_output[o] = true;
  auto is_view = [&](const FusedGroup& group) {
    const Node& n = g.node(group.root());
    return group.nodes.size() == 1 && n.op == "reshape" && node_target(n).empty() && !is_output[group.root()] &&
           !g.node(n.inputs[0]).is_constant();
  };
  size_t views = 0;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (is_view(groups[k])) {
      view_of[groups[k].root()] = g.node(groups[k].root()).inputs[0];
      ++views;
      continue;
    }
    // Named after the group's anchor (its heaviest op) and its last op: k3_conv2d_nchwc_relu.
    const Node& root = g.node(groups[k].root());
    NodeId anchor = groups[k].nodes.front();
    for (NodeId id : groups[k].nodes)
      if (op_def(g.node(id).op).pattern > op_def(g.node(anchor).op).pattern) anchor = id;
    size_t index = k - views;
    std::string name = g.node(anchor).op == root.op ? fmt::format("k{}_{}", index, root.op)
                                                    : fmt::format("k{}_{}_{}", index, g.node(anchor).op, root.op);
    std::string where = groups[k].nodes.size() == 1 ? node_target(root) : "";
    if (debug_enabled("graph")) {
      std::vector<std::string> ids;
      for (NodeId id : groups[k].nodes) ids.push_back("%" + std::to_string(id));
      std::cerr << "// kernel " << name << " [" << (where.empty() ? "host" : where) << "]: "
                << fmt::format("{}", fmt::join(ids, " ")) << "\n";
    }
    if (!where.empty()) {
      if (!strategy || where != strategy->kind())
        throw CompileError(fmt::format("node '{}' is marked for target '{}', compiling for '{}'", root.name, where,
                                       m.target.str()));
      m.kernels.push_back(strategy->lower(g, groups[k].root(), name, m.target, options.knob_hook));
      m.kernels.back().on_accelerator = true;
    } else {
      m.kernels.push_back(lower_group(g, groups[k].nodes, name, {}, options.schedule_hook, machine));
    }
    io.push_back(KernelIO{m.kernels.back().inputs, m.kernels.back().outputs, m.kernels.back().on_accelerator});
  }
  m.memory = plan_memory(g, io, view_of);
  return m;
}

std::vector<target::KernelSignature> ExecPlan::signatures(bool accelerator) const {
  std::vector<target::KernelSignature> r;
  for (const auto& k : kernels)
    if (k.on_accelerator == accelerator) r.push_back({k.name, static_cast<int>(k.args.size())});
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
  if (!m.target.is_cpu()) p.accelerator = m.target.str();
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
    ExecPlan::Kernel pk{k.func.name, {}, k.on_accelerator};
    for (NodeId i : k.inputs) pk.args.push_back(buffer(i));
    for (NodeId o : k.outputs) pk.args.push_back(buffer(o));
    p.kernels.push_back(std::move(pk));
  }
  return p;
}

namespace {

// The arguments of one side's kernels (the accelerator's, or the host module's) as the
// plan uses them: a buffer that no kernel of the other side touches and that is no
// graph input or output lives in that side's memory alone (the plan shares a buffer
// between tensors of disjoint lifetimes, so one use anywhere else makes it shared). A
// host module with memory of its own (a GPU's) keeps such buffers there; the CPU's
// ignores the plan.
std::vector<std::vector<target::ArgUse>> memory_uses(const ExecPlan& plan, bool accelerator) {
  std::vector<bool> outside(plan.buffers.size(), false);
  for (const auto& t : plan.inputs) outside.at(t.buffer) = true;
  for (const auto& t : plan.outputs) outside.at(t.buffer) = true;
  for (const auto& k : plan.kernels)
    if (k.on_accelerator != accelerator)
      for (int b : k.args) outside.at(b) = true;
  std::vector<std::vector<target::ArgUse>> uses;
  for (const auto& k : plan.kernels) {
    if (k.on_accelerator != accelerator) continue;
    std::vector<target::ArgUse> args;
    for (int b : k.args) {
      const ExecPlan::Buffer& buf = plan.buffers.at(b);
      args.push_back({b, buf.bytes, buf.init != nullptr, !buf.init && !outside[b]});
    }
    uses.push_back(std::move(args));
  }
  return uses;
}

}  // namespace

Executor::Executor(ExecPlan plan, std::unique_ptr<target::KernelModule> kernels,
                   std::unique_ptr<target::KernelModule> accelerator)
    : plan_(std::move(plan)), kernels_(std::move(kernels)), accel_(std::move(accelerator)) {
  size_t host = 0, accel = 0;
  for (const auto& k : plan_.kernels) {
    if (!k.on_accelerator) {
      calls_.emplace_back(kernels_.get(), host++);
      continue;
    }
    if (!accel_) throw CompileError("kernel '" + k.name + "' runs on the accelerator, and the executor has none");
    calls_.emplace_back(accel_.get(), accel++);
  }
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
  if (kernels_) kernels_->plan_memory(memory_uses(plan_, false));
  if (accel_) accel_->plan_memory(memory_uses(plan_, true));
}

Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;

void Executor::set_input(size_t k, const void* data, int64_t bytes) {
  const auto& in = plan_.inputs.at(k);
  if (bytes != bytes_of(in.type))
    throw CompileError(fmt::format("input {} ('{}', {}) takes {} bytes, got {}", k, in.name, in.type.to_string(),
                                   bytes_of(in.type), bytes));
  if (bytes > 0) std::memcpy(blocks_.at(in.buffer).get(), data, static_cast<size_t>(bytes));  // an empty tensor may have no data
}

void Executor::run() {
  for (size_t k = 0; k < args_.size(); ++k) calls_[k].first->call(calls_[k].second, args_[k].data());
}

std::vector<double> Executor::run_profiled() {
  std::vector<double> ms;
  for (size_t k = 0; k < args_.size(); ++k) {
    auto t0 = std::chrono::steady_clock::now();
    calls_[k].first->call(calls_[k].second, args_[k].data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

const void* Executor::output(size_t k) const { return blocks_.at(plan_.outputs.at(k).buffer).get(); }
int64_t Executor::output_bytes(size_t k) const { return bytes_of(output_type(k)); }

AcceleratorReport accelerator_report(const Executor& ex, const std::vector<double>& kernel_ms) {
  AcceleratorReport r;
  if (!ex.accelerator()) return r;
  std::vector<target::KernelStats> stats = ex.accelerator()->stats();
  size_t next = 0;
  for (size_t k = 0; k < ex.plan().kernels.size(); ++k) {
    double ms = k < kernel_ms.size() ? kernel_ms[k] : 0;
    if (!ex.plan().kernels[k].on_accelerator) {
      r.host_ms += ms;
      continue;
    }
    r.accelerator_ms += ms;
    AcceleratorReport::Layer l{ex.plan().kernels[k].name, ms, {}};
    if (next < stats.size()) l.values = stats[next++].values;
    auto value = [&](const char* key) { return l.values.count(key) ? l.values.at(key) : 0.0; };
    r.cycles += value("cycles");
    r.ideal_cycles += value("gemm_uops");
    r.dram_bytes += value("dram_bytes");
    r.host_bytes += value("host_bytes");
    r.layers.push_back(std::move(l));
  }
  return r;
}

Executor make_executor(const CompiledModel& m) {
  const target::Target host = m.target.host_target();
  return make_executor(m, host.backend(), host.str());
}

Executor make_executor(const CompiledModel& m, const std::string& backend, const std::string& target) {
  std::vector<schedule::LoweredFunc> host, accel;
  for (const auto& k : m.kernels) (k.on_accelerator ? accel : host).push_back(k.func);
  std::unique_ptr<target::KernelModule> accel_module;
  if (!accel.empty()) accel_module = target::make_backend(m.target.backend())->build(accel, m.target.str());
  // A model placed whole on the accelerator has no host kernels to build.
  auto host_module = target::make_backend(host.empty() ? "interp" : backend)->build(host, target);
  return Executor(make_plan(m), std::move(host_module), std::move(accel_module));
}

}  // namespace kiln::graph
