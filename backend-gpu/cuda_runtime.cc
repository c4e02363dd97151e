#include "backend-gpu/cuda_runtime.h"

#include <cuda.h>  // types only: the driver is loaded with dlopen
#include <dlfcn.h>
#include <fmt/format.h>
#include <nvrtc.h>

#include <mutex>
#include <regex>

#include "backend-gpu/codegen_c.h"
#include "compiler/support/error.h"

namespace kiln::gpu {

namespace {

// ---------------------------------------------------------------- NVRTC

void check_nvrtc(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw CompileError(fmt::format("NVRTC: {} failed: {}", call, nvrtcGetErrorString(r)));
}

// ---------------------------------------------------------------- the driver API

// The driver's entry points this runtime uses, by their exported (versioned) names.
struct Driver {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuEventCreate)(CUevent*, unsigned int);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuGetErrorString)(CUresult, const char**);

  void check(CUresult r, const char* call) const {
    if (r == CUDA_SUCCESS) return;
    const char* s = nullptr;
    if (cuGetErrorString(r, &s) != CUDA_SUCCESS || !s) s = "unknown error";
    throw RuntimeError(fmt::format("CUDA: {} failed: {} ({})", call, s, static_cast<int>(r)));
  }
};

// The driver, loaded and initialized once; RuntimeError saying what is missing.
const Driver& driver() {
  static std::once_flag once;
  static Driver d;
  static std::string error;
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = "no CUDA driver (libcuda.so.1) on this machine";
      return;
    }
    auto sym = [&](const char* name, const char* fallback = nullptr) {
      void* p = dlsym(lib, name);
      if (!p && fallback) p = dlsym(lib, fallback);
      if (!p && error.empty()) error = fmt::format("the CUDA driver (libcuda.so.1) lacks {}", name);
      return p;
    };
#define KILN_CU(field, ...) d.field = reinterpret_cast<decltype(d.field)>(sym(__VA_ARGS__))
    KILN_CU(cuInit, "cuInit");
    KILN_CU(cuDeviceGetCount, "cuDeviceGetCount");
    KILN_CU(cuDeviceGet, "cuDeviceGet");
    KILN_CU(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    KILN_CU(cuCtxSetCurrent, "cuCtxSetCurrent");
    KILN_CU(cuModuleLoadData, "cuModuleLoadData");
    KILN_CU(cuModuleUnload, "cuModuleUnload");
    KILN_CU(cuModuleGetFunction, "cuModuleGetFunction");
    KILN_CU(cuMemAlloc, "cuMemAlloc_v2");
    KILN_CU(cuMemFree, "cuMemFree_v2");
    KILN_CU(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    KILN_CU(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    KILN_CU(cuLaunchKernel, "cuLaunchKernel");
    KILN_CU(cuCtxSynchronize, "cuCtxSynchronize");
    KILN_CU(cuEventCreate, "cuEventCreate");
    KILN_CU(cuEventRecord, "cuEventRecord");
    KILN_CU(cuEventSynchronize, "cuEventSynchronize");
    KILN_CU(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
    KILN_CU(cuEventDestroy, "cuEventDestroy_v2");
    KILN_CU(cuGetErrorString, "cuGetErrorString");
#undef KILN_CU
    if (!error.empty()) return;
    CUresult r = d.cuInit(0);
    if (r != CUDA_SUCCESS) {
      const char* s = nullptr;
      d.cuGetErrorString(r, &s);
      error = fmt::format("CUDA: cuInit failed: {} ({})", s ? s : "unknown error", static_cast<int>(r));
    }
  });
  if (!error.empty()) throw RuntimeError(error);
  return d;
}

class CudaProgram : public DeviceProgram {
 public:
  CudaProgram(const std::string& ptx, std::vector<std::string> names, int device)
      : d_(driver()), names_(std::move(names)), events_(names_.size()), ms_(names_.size(), -1) {
    int count = 0;
    d_.check(d_.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (device < 0 || device >= count) throw RuntimeError(fmt::format("CUDA: no device {} (there are {})", device, count));
    CUdevice dev = 0;
    d_.check(d_.cuDeviceGet(&dev, device), "cuDeviceGet");
    d_.check(d_.cuDevicePrimaryCtxRetain(&ctx_, dev), "cuDevicePrimaryCtxRetain");
    current();
    d_.check(d_.cuModuleLoadData(&module_, ptx.c_str()), "cuModuleLoadData");
    for (const std::string& n : names_) {
      CUfunction f = nullptr;
      d_.check(d_.cuModuleGetFunction(&f, module_, n.c_str()), ("cuModuleGetFunction(" + n + ")").c_str());
      functions_.push_back(f);
    }
  }
  ~CudaProgram() override {
    if (d_.cuCtxSetCurrent(ctx_) != CUDA_SUCCESS) return;
    for (auto& [start, end] : events_) {
      if (start) d_.cuEventDestroy(start);
      if (end) d_.cuEventDestroy(end);
    }
    if (module_) d_.cuModuleUnload(module_);
  }

  DevicePtr alloc(size_t bytes) override {
    current();
    CUdeviceptr p = 0;
    d_.check(d_.cuMemAlloc(&p, bytes), "cuMemAlloc_v2");
    return p;
  }
  void free(DevicePtr p) override {
    current();
    d_.check(d_.cuMemFree(p), "cuMemFree_v2");
  }
  void upload(DevicePtr dst, const void* src, size_t bytes) override {
    current();
    d_.check(d_.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD_v2");
  }
  void download(void* dst, DevicePtr src, size_t bytes) override {
    current();
    d_.check(d_.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH_v2");
  }
  void launch(size_t kernel, const std::vector<DevicePtr>& args, const LaunchDims& dims) override {
    current();
    std::vector<CUdeviceptr> values(args.begin(), args.end());
    std::vector<void*> params;
    for (CUdeviceptr& v : values) params.push_back(&v);
    auto& [start, end] = events_.at(kernel);
    if (!start) {
      d_.check(d_.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
      d_.check(d_.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate");
    }
    d_.check(d_.cuEventRecord(start, nullptr), "cuEventRecord");
    CUresult r = d_.cuLaunchKernel(functions_[kernel], static_cast<unsigned>(dims.grid[0]), static_cast<unsigned>(dims.grid[1]),
                                   static_cast<unsigned>(dims.grid[2]), static_cast<unsigned>(dims.block[0]),
                                   static_cast<unsigned>(dims.block[1]), static_cast<unsigned>(dims.block[2]), 0, nullptr,
                                   params.data(), nullptr);
    d_.check(r, ("cuLaunchKernel(" + names_[kernel] + ")").c_str());
    d_.check(d_.cuEventRecord(end, nullptr), "cuEventRecord");
    launched_.push_back(kernel);
  }
  void finish() override {
    current();
    d_.check(d_.cuCtxSynchronize(), "cuCtxSynchronize");
    for (size_t k : launched_) {
      float ms = 0;
      d_.check(d_.cuEventSynchronize(events_[k].second), "cuEventSynchronize");
      d_.check(d_.cuEventElapsedTime(&ms, events_[k].first, events_[k].second), "cuEventElapsedTime");
      ms_[k] = ms;
    }
    launched_.clear();
  }
  double kernel_ms(size_t kernel) const override { return ms_.at(kernel); }
  const std::vector<std::string>& kernel_names() const override { return names_; }

 private:
  void current() const { d_.check(d_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

  const Driver& d_;
  std::vector<std::string> names_;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_;
  std::vector<std::pair<CUevent, CUevent>> events_;  // per kernel: around its last launch
  std::vector<size_t> launched_;                      // since the last finish()
  std::vector<double> ms_;
};

}  // namespace

std::string nvrtc_ptx(const std::string& source, const std::string& arch) {
  if (!std::regex_match(arch, std::regex("(sm|compute)_[0-9]+[a-z]?")))
    throw CompileError("CUDA: '" + arch + "' is not an architecture (e.g. sm_80)");
  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, source.c_str(), "kiln_kernels.cu", 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17"};
  nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    nvrtcDestroyProgram(&prog);
    while (!log.empty() && log.back() == '\0') log.pop_back();
    throw CompileError(fmt::format("NVRTC: compiling the kernels for {} failed ({}):\n{}", arch, nvrtcGetErrorString(r), log));
  }
  size_t n = 0;
  std::string ptx;
  try {
    check_nvrtc(nvrtcGetPTXSize(prog, &n), "nvrtcGetPTXSize");
    ptx.assign(n, '\0');
    check_nvrtc(nvrtcGetPTX(prog, ptx.data()), "nvrtcGetPTX");
  } catch (...) {
    nvrtcDestroyProgram(&prog);
    throw;
  }
  nvrtcDestroyProgram(&prog);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

std::string cuda_ptx(const passes::DeviceFunc& f, const std::string& arch) { return nvrtc_ptx(cuda_source(f), arch); }

bool cuda_driver_available(std::string* why) {
  try {
    int count = 0;
    const Driver& d = driver();
    d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) throw RuntimeError("CUDA: the driver sees no device");
    return true;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
}

std::unique_ptr<DeviceProgram> cuda_program(const std::string& ptx, const std::vector<std::string>& kernels, int device) {
  return std::make_unique<CudaProgram>(ptx, kernels, device);
}

}  // namespace kiln::gpu
