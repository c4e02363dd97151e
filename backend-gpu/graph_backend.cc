#include "backend-gpu/graph_backend.h"

#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "backend-gpu/codegen_c.h"
#include "backend-gpu/device_module.h"
#include "backend-gpu/opencl_runtime.h"
#include "compiler/passes/split_host_device.h"
#include "compiler/support/error.h"
#include "compiler/target/backend.h"
#include "support/debug.h"
#ifdef KILN_GPU_HAVE_CUDA
#include "backend-gpu/cuda_runtime.h"
#endif

namespace kiln::gpu {

namespace {

// Threads per block of the default GPU schedules.
constexpr int kDefaultThreads = 256;

// The options of a backend-specific target string ("opencl -device=1", "" for none).
target::Target read_options(const std::string& options) {
  return options.empty() ? target::Target() : target::Target::read(options);
}

// A -device=N option (-1 when absent).
int device_index(const target::Target& t) {
  std::string s = t.option("device");
  if (s.empty()) return -1;
  size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < 0) throw CompileError(fmt::format("target '{}': -device={} is not a device index", t.str(), s));
  return v;
}

// The source a module's kernels are built from; KILN_DEBUG=gpu prints it.
std::string module_source(const std::vector<passes::DeviceFunc>& funcs, Dialect dialect) {
  std::string src = device_source(funcs, dialect);
  if (debug_enabled("gpu")) std::cerr << "// ---- GPU kernels\n" << src;
  return src;
}

std::vector<passes::DeviceFunc> split_all(const std::vector<schedule::LoweredFunc>& funcs, const passes::GpuLimits& limits) {
  passes::SplitOptions opts;
  opts.limits = limits;
  std::vector<passes::DeviceFunc> out;
  for (const schedule::LoweredFunc& f : funcs) out.push_back(passes::split_host_device(f, opts));
  return out;
}

// A module without functions (every operator folded): nothing to build or run.
class NoKernels : public target::KernelModule {
 public:
  void call(size_t index, void* const*) const override {
    throw RuntimeError(fmt::format("kernel {} called on a model without kernels", index));
  }
};

target::MachineTraits gpu_traits() {
  target::MachineTraits t;
  t.gpu_threads = kDefaultThreads;
  return t;
}

// What the GPU targets share: the whole model on the device, the default schedules'
// machine, a -device=N option.
class GpuBackend : public target::Backend {
 public:
  GpuBackend(std::string kind, std::vector<std::string> options) : kind_(std::move(kind)), options_(std::move(options)) {}
  std::string name() const override { return kind_; }
  bool is_host() const override { return true; }
  std::vector<std::string> option_names() const override { return options_; }
  void check(const target::Target& t) const override { (void)device_index(t); }
  target::MachineTraits traits(const std::string& options) const override {
    (void)device_index(read_options(options));
    return gpu_traits();
  }

 private:
  std::string kind_;
  std::vector<std::string> options_;
};

class OpenclBackend : public GpuBackend {
 public:
  OpenclBackend() : GpuBackend("opencl", {"device"}) {}
  std::unique_ptr<target::KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs,
                                              const std::string& options) const override {
    if (funcs.empty()) return std::make_unique<NoKernels>();
    int device = device_index(read_options(options));
    std::vector<passes::DeviceFunc> dfuncs = split_all(funcs, opencl_limits(device));
    std::unique_ptr<DeviceProgram> program =
        opencl_program(module_source(dfuncs, Dialect::OpenCL), kernel_names(dfuncs), device);
    return std::make_unique<DeviceModule>(std::move(dfuncs), std::move(program));
  }
};

#ifdef KILN_GPU_HAVE_CUDA
// A program made on first use: a CUDA module compiles (NVRTC) on a machine without a
// GPU and says that there is none only when it is run.
class LazyProgram : public DeviceProgram {
 public:
  LazyProgram(std::vector<std::string> names, std::function<std::unique_ptr<DeviceProgram>()> make)
      : names_(std::move(names)), make_(std::move(make)) {}
  DevicePtr alloc(size_t bytes) override { return get().alloc(bytes); }
  void free(DevicePtr p) override { get().free(p); }
  void upload(DevicePtr dst, const void* src, size_t bytes) override { get().upload(dst, src, bytes); }
  void download(void* dst, DevicePtr src, size_t bytes) override { get().download(dst, src, bytes); }
  void launch(size_t kernel, const std::vector<DevicePtr>& args, const LaunchDims& dims) override {
    get().launch(kernel, args, dims);
  }
  void finish() override { get().finish(); }
  double kernel_ms(size_t kernel) const override { return program_ ? program_->kernel_ms(kernel) : -1; }
  const std::vector<std::string>& kernel_names() const override { return names_; }

 private:
  DeviceProgram& get() {
    if (!program_) program_ = make_();
    return *program_;
  }
  std::vector<std::string> names_;
  std::function<std::unique_ptr<DeviceProgram>()> make_;
  std::unique_ptr<DeviceProgram> program_;
};

class CudaBackend : public GpuBackend {
 public:
  CudaBackend() : GpuBackend("cuda", {"arch", "device"}) {}
  std::unique_ptr<target::KernelModule> build(const std::vector<schedule::LoweredFunc>& funcs,
                                              const std::string& options) const override {
    if (funcs.empty()) return std::make_unique<NoKernels>();
    target::Target t = read_options(options);
    int device = std::max(0, device_index(t));
    std::vector<passes::DeviceFunc> dfuncs = split_all(funcs, passes::GpuLimits{});
    std::string ptx = nvrtc_ptx(module_source(dfuncs, Dialect::Cuda), t.option("arch", kDefaultCudaArch));
    std::vector<std::string> names = kernel_names(dfuncs);
    auto program = std::make_unique<LazyProgram>(names, [ptx, names, device] { return cuda_program(ptx, names, device); });
    return std::make_unique<DeviceModule>(std::move(dfuncs), std::move(program));
  }
};
#endif

}  // namespace

void register_graph_backends() {
  target::register_backend("opencl", [] { return std::make_unique<OpenclBackend>(); });
#ifdef KILN_GPU_HAVE_CUDA
  target::register_backend("cuda", [] { return std::make_unique<CudaBackend>(); });
#endif
}

}  // namespace kiln::gpu
