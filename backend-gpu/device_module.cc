#include "backend-gpu/device_module.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/ir/functor.h"

namespace kiln::gpu {

namespace {

// A buffer's bytes on the device (bool takes a byte); at least one, as OpenCL refuses 0.
size_t buffer_bytes(const passes::DeviceBuffer& b) {
  return static_cast<size_t>(std::max<int64_t>(1, b.elements * b.dtype.storage_bytes()));
}

}  // namespace

std::vector<std::string> kernel_names(const std::vector<passes::DeviceFunc>& funcs) {
  std::vector<std::string> names;
  for (const passes::DeviceFunc& f : funcs)
    for (const passes::DeviceKernel& k : f.kernels) names.push_back(k.name);
  return names;
}

LaunchDims launch_dims(const passes::DeviceKernel& k) {
  static const char* const grid[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  static const char* const block[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  LaunchDims d;
  for (const passes::ThreadAxis& a : k.axes) {
    for (int i = 0; i < 3; ++i) {
      if (a.tag == grid[i]) d.grid[i] = std::max(d.grid[i], static_cast<size_t>(a.extent));
      if (a.tag == block[i]) d.block[i] = std::max(d.block[i], static_cast<size_t>(a.extent));
    }
  }
  return d;
}

DeviceModule::DeviceModule(std::vector<passes::DeviceFunc> funcs, std::unique_ptr<DeviceProgram> program)
    : funcs_(std::move(funcs)), program_(std::move(program)), buffers_(funcs_.size()) {
  size_t n = 0;
  for (const passes::DeviceFunc& f : funcs_) {
    first_kernel_.push_back(n);
    n += f.kernels.size();
  }
  if (n != program_->kernel_names().size()) throw RuntimeError("the GPU program does not hold the module's kernels");
  for (const passes::DeviceFunc& f : funcs_) {
    std::vector<bool> read(f.buffers.size(), false);
    for (const passes::DeviceKernel& k : f.kernels)
      ir::post_order_visit(k.body, [&](const ir::Node* node) {
        if (node->kind != ir::NodeKind::Load) return;
        const ir::VarNode* v = static_cast<const ir::LoadNode*>(node)->buffer_var.get();
        for (size_t i = 0; i < f.buffers.size(); ++i)
          if (f.buffers[i].data.get() == v) read[i] = true;
      });
    read_.push_back(std::move(read));
  }
}

void DeviceModule::plan_memory(const std::vector<std::vector<target::ArgUse>>& kernels) {
  if (kernels.size() != funcs_.size())
    throw RuntimeError(fmt::format("GPU module: a memory plan for {} functions, the module has {}", kernels.size(), funcs_.size()));
  for (size_t f = 0; f < funcs_.size(); ++f) {
    if (kernels[f].size() != funcs_[f].args.size())
      throw RuntimeError(fmt::format("GPU module: function {} takes {} arguments, the plan gives {}", f, funcs_[f].args.size(),
                                     kernels[f].size()));
    for (const target::ArgUse& u : kernels[f]) {
      size_t& bytes = planned_bytes_[u.buffer];
      bytes = std::max(bytes, static_cast<size_t>(std::max<int64_t>(1, u.bytes)));
    }
  }
  plan_ = kernels;
}

DeviceModule::~DeviceModule() {
  auto release = [&](DevicePtr p) {
    try {
      if (p) program_->free(p);
    } catch (const Error&) {  // a destructor does not throw; the context goes anyway
    }
  };
  for (const auto& bufs : buffers_)
    for (DevicePtr p : bufs) release(p);
  for (const auto& [id, p] : planned_) release(p);
}

void DeviceModule::call(size_t index, void* const* args) const {
  if (index >= funcs_.size()) throw RuntimeError(fmt::format("GPU module: no function {} (it has {})", index, funcs_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  const passes::DeviceFunc& f = funcs_[index];
  const bool planned = !plan_.empty();
  std::vector<DevicePtr>& bufs = buffers_[index];
  if (bufs.empty()) {
    // Temporaries are the function's own; arguments too without a plan, else the
    // plan buffer's (0 here).
    for (const passes::DeviceBuffer& b : f.buffers) bufs.push_back(planned && b.is_arg ? 0 : program_->alloc(buffer_bytes(b)));
  }
  std::vector<DevicePtr> ptr(bufs);
  for (size_t i = 0; i < f.buffers.size(); ++i) {
    const passes::DeviceBuffer& b = f.buffers[i];
    if (!b.is_arg) continue;
    size_t bytes = buffer_bytes(b);
    if (!planned) {
      program_->upload(ptr[i], args[b.arg_index], bytes);
      uploaded_ += bytes;
      continue;
    }
    const target::ArgUse& u = plan_[index][static_cast<size_t>(b.arg_index)];
    DevicePtr& p = planned_[u.buffer];
    if (!p) p = program_->alloc(planned_bytes_.at(u.buffer));
    ptr[i] = p;
    // Constants once; what only the GPU uses never; the rest when this function reads it
    // as an input (a function's outputs are computed whole: a reduction that reads its
    // output has written it first).
    bool upload = u.constant ? constants_uploaded_.insert(u.buffer).second : !u.device_only && read_[index][i] && !b.written;
    if (upload) {
      program_->upload(p, args[b.arg_index], bytes);
      uploaded_ += bytes;
    }
  }
  for (size_t k = 0; k < f.kernels.size(); ++k) {
    std::vector<DevicePtr> params;
    for (int p : f.kernels[k].params) params.push_back(ptr.at(static_cast<size_t>(p)));
    program_->launch(first_kernel_[index] + k, params, launch_dims(f.kernels[k]));
  }
  for (size_t i = 0; i < f.buffers.size(); ++i) {
    const passes::DeviceBuffer& b = f.buffers[i];
    if (!b.is_arg || !b.written) continue;
    if (planned && plan_[index][static_cast<size_t>(b.arg_index)].device_only) continue;
    program_->download(args[b.arg_index], ptr[i], buffer_bytes(b));
    downloaded_ += buffer_bytes(b);
  }
  program_->finish();
}

std::vector<target::KernelStats> DeviceModule::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<target::KernelStats> out;
  const std::vector<std::string>& names = program_->kernel_names();
  for (size_t i = 0; i < names.size(); ++i) {
    double ms = program_->kernel_ms(i);
    if (ms >= 0) out.push_back({names[i], {{"ms", ms}}});
  }
  return out;
}

}  // namespace kiln::gpu
