#include "backend-gpu/opencl_runtime.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "compiler/support/error.h"

namespace kiln::gpu {

namespace {

std::string error_name(cl_int e) {
  static const std::map<cl_int, const char*> names = {
      {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
      {CL_DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE"},
      {CL_COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE"},
      {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
      {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
      {CL_PROFILING_INFO_NOT_AVAILABLE, "CL_PROFILING_INFO_NOT_AVAILABLE"},
      {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
      {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
      {CL_INVALID_DEVICE, "CL_INVALID_DEVICE"},
      {CL_INVALID_CONTEXT, "CL_INVALID_CONTEXT"},
      {CL_INVALID_COMMAND_QUEUE, "CL_INVALID_COMMAND_QUEUE"},
      {CL_INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT"},
      {CL_INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS"},
      {CL_INVALID_PROGRAM, "CL_INVALID_PROGRAM"},
      {CL_INVALID_PROGRAM_EXECUTABLE, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {CL_INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME"},
      {CL_INVALID_KERNEL, "CL_INVALID_KERNEL"},
      {CL_INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX"},
      {CL_INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE"},
      {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
      {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
      {CL_INVALID_WORK_DIMENSION, "CL_INVALID_WORK_DIMENSION"},
      {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
      {CL_INVALID_WORK_ITEM_SIZE, "CL_INVALID_WORK_ITEM_SIZE"},
      {CL_INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {CL_INVALID_EVENT, "CL_INVALID_EVENT"},
      {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  auto it = names.find(e);
  return it == names.end() ? fmt::format("error {}", e) : fmt::format("{} ({})", it->second, e);
}

void check(cl_int err, const char* call) {
  if (err != CL_SUCCESS) throw RuntimeError(fmt::format("OpenCL: {} failed: {}", call, error_name(err)));
}

std::string device_string(cl_device_id d, cl_device_info what, const char* call) {
  size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), call);
  std::string s(n, '\0');
  check(clGetDeviceInfo(d, what, n, s.data(), nullptr), call);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof(T), &v, nullptr), "clGetDeviceInfo");
  return v;
}

struct DeviceRef {
  cl_platform_id platform;
  cl_device_id device;
};

// Every device of every platform, in order.
std::vector<DeviceRef> all_devices() {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err == -1001 || np == 0) throw RuntimeError("OpenCL: no platform found (install an ICD such as pocl-opencl-icd)");
  check(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<DeviceRef> out;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd);
    if (err == CL_DEVICE_NOT_FOUND) continue;
    check(err, "clGetDeviceIDs");
    std::vector<cl_device_id> ds(nd);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr), "clGetDeviceIDs");
    for (cl_device_id d : ds) out.push_back({p, d});
  }
  if (out.empty()) throw RuntimeError("OpenCL: no device found on any platform");
  return out;
}

// The index of the device to use (see opencl_device()).
int choose(int index, const std::vector<DeviceRef>& devices) {
  if (index < 0) {
    if (const char* env = std::getenv("KILN_OPENCL_DEVICE"); env && *env) {
      char* end = nullptr;
      long v = std::strtol(env, &end, 10);
      if (*end != '\0' || v < 0) throw RuntimeError(fmt::format("KILN_OPENCL_DEVICE='{}' is not a device index", env));
      index = static_cast<int>(v);
    }
  }
  if (index < 0) {
    for (size_t i = 0; i < devices.size(); ++i)
      if (device_value<cl_device_type>(devices[i].device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) return static_cast<int>(i);
    return 0;
  }
  if (static_cast<size_t>(index) >= devices.size())
    throw RuntimeError(fmt::format("OpenCL: no device {} (there are {})", index, devices.size()));
  return index;
}

// A device with its context and its in-order profiling queue.
struct Context {
  OpenclDeviceInfo info;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  bool correctly_rounded_sqrt = false;
  ~Context() {
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
};

std::shared_ptr<Context> make_context(const DeviceRef& ref, int index) {
  auto c = std::make_shared<Context>();
  c->device = ref.device;
  c->info.index = index;
  c->info.name = device_string(ref.device, CL_DEVICE_NAME, "clGetDeviceInfo(CL_DEVICE_NAME)");
  c->info.version = device_string(ref.device, CL_DEVICE_VERSION, "clGetDeviceInfo(CL_DEVICE_VERSION)");
  size_t n = 0;
  check(clGetPlatformInfo(ref.platform, CL_PLATFORM_NAME, 0, nullptr, &n), "clGetPlatformInfo");
  c->info.platform.assign(n, '\0');
  check(clGetPlatformInfo(ref.platform, CL_PLATFORM_NAME, n, c->info.platform.data(), nullptr), "clGetPlatformInfo");
  while (!c->info.platform.empty() && c->info.platform.back() == '\0') c->info.platform.pop_back();
  c->info.is_gpu = device_value<cl_device_type>(ref.device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU;
  c->info.max_work_group_size = static_cast<int64_t>(device_value<size_t>(ref.device, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  c->info.local_mem_bytes = static_cast<int64_t>(device_value<cl_ulong>(ref.device, CL_DEVICE_LOCAL_MEM_SIZE));
  size_t sizes[3] = {0, 0, 0};
  check(clGetDeviceInfo(ref.device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(sizes), sizes, nullptr),
        "clGetDeviceInfo(CL_DEVICE_MAX_WORK_ITEM_SIZES)");
  for (int i = 0; i < 3; ++i) c->info.max_work_item_sizes[i] = static_cast<int64_t>(sizes[i]);
  c->correctly_rounded_sqrt =
      device_value<cl_device_fp_config>(ref.device, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT;
  cl_int err = CL_SUCCESS;
  c->context = clCreateContext(nullptr, 1, &ref.device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  c->queue = clCreateCommandQueue(c->context, ref.device, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  return c;
}

// The process's context on device `index` (-1: the default choice), made on first use.
std::shared_ptr<Context> context(int index) {
  static std::mutex mu;
  static std::map<int, std::shared_ptr<Context>> contexts;
  std::lock_guard<std::mutex> lock(mu);
  std::vector<DeviceRef> devices = all_devices();
  int i = choose(index, devices);
  auto& c = contexts[i];
  if (!c) c = make_context(devices[static_cast<size_t>(i)], i);
  return c;
}

cl_mem mem_of(DevicePtr p) { return reinterpret_cast<cl_mem>(static_cast<uintptr_t>(p)); }

class OpenclProgram : public DeviceProgram {
 public:
  OpenclProgram(std::shared_ptr<Context> ctx, const std::string& source, std::vector<std::string> names)
      : ctx_(std::move(ctx)), names_(std::move(names)), events_(names_.size(), nullptr), ms_(names_.size(), -1) {
    const char* text = source.c_str();
    size_t length = source.size();
    cl_int err = CL_SUCCESS;
    program_ = clCreateProgramWithSource(ctx_->context, 1, &text, &length, &err);
    check(err, "clCreateProgramWithSource");
    std::string options = "-cl-std=CL1.2";
    if (ctx_->correctly_rounded_sqrt) options += " -cl-fp32-correctly-rounded-divide-sqrt";
    err = clBuildProgram(program_, 1, &ctx_->device, options.c_str(), nullptr, nullptr);
    if (err == CL_BUILD_PROGRAM_FAILURE) throw CompileError("OpenCL: building the kernels failed:\n" + build_log());
    check(err, "clBuildProgram");
    for (const std::string& n : names_) {
      kernels_.push_back(clCreateKernel(program_, n.c_str(), &err));
      check(err, ("clCreateKernel(" + n + ")").c_str());
    }
  }
  ~OpenclProgram() override {
    for (cl_event e : events_)
      if (e) clReleaseEvent(e);
    for (cl_kernel k : kernels_)
      if (k) clReleaseKernel(k);
    if (program_) clReleaseProgram(program_);
  }

  DevicePtr alloc(size_t bytes) override {
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx_->context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    check(err, "clCreateBuffer");
    return reinterpret_cast<uintptr_t>(m);
  }
  void free(DevicePtr p) override { check(clReleaseMemObject(mem_of(p)), "clReleaseMemObject"); }
  void upload(DevicePtr dst, const void* src, size_t bytes) override {
    check(clEnqueueWriteBuffer(ctx_->queue, mem_of(dst), CL_TRUE, 0, bytes, src, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }
  void download(void* dst, DevicePtr src, size_t bytes) override {
    check(clEnqueueReadBuffer(ctx_->queue, mem_of(src), CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
  }
  void launch(size_t kernel, const std::vector<DevicePtr>& args, const LaunchDims& dims) override {
    cl_kernel k = kernels_.at(kernel);
    for (size_t i = 0; i < args.size(); ++i) {
      cl_mem m = mem_of(args[i]);
      check(clSetKernelArg(k, static_cast<cl_uint>(i), sizeof(cl_mem), &m), "clSetKernelArg");
    }
    size_t global[3], local[3];
    for (int i = 0; i < 3; ++i) {
      global[i] = dims.grid[i] * dims.block[i];
      local[i] = dims.block[i];
    }
    cl_event e = nullptr;
    cl_int err = clEnqueueNDRangeKernel(ctx_->queue, k, 3, nullptr, global, local, 0, nullptr, &e);
    if (err != CL_SUCCESS)
      throw RuntimeError(fmt::format("OpenCL: clEnqueueNDRangeKernel({}, global {}x{}x{}, local {}x{}x{}) failed: {}",
                                     names_[kernel], global[0], global[1], global[2], local[0], local[1], local[2],
                                     error_name(err)));
    if (events_[kernel]) clReleaseEvent(events_[kernel]);
    events_[kernel] = e;
  }
  void finish() override {
    check(clFinish(ctx_->queue), "clFinish");
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!events_[i]) continue;
      cl_ulong start = 0, end = 0;
      cl_int a = clGetEventProfilingInfo(events_[i], CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr);
      cl_int b = clGetEventProfilingInfo(events_[i], CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
      ms_[i] = a == CL_SUCCESS && b == CL_SUCCESS ? static_cast<double>(end - start) * 1e-6 : -1;
      clReleaseEvent(events_[i]);
      events_[i] = nullptr;
    }
  }
  double kernel_ms(size_t kernel) const override { return ms_.at(kernel); }
  const std::vector<std::string>& kernel_names() const override { return names_; }

 private:
  std::string build_log() const {
    size_t n = 0;
    clGetProgramBuildInfo(program_, ctx_->device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(program_, ctx_->device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    while (!log.empty() && log.back() == '\0') log.pop_back();
    return log;
  }

  std::shared_ptr<Context> ctx_;
  std::vector<std::string> names_;
  cl_program program_ = nullptr;
  std::vector<cl_kernel> kernels_;
  std::vector<cl_event> events_;  // each kernel's last launch, until finish()
  std::vector<double> ms_;
};

}  // namespace

OpenclDeviceInfo opencl_device(int index) { return context(index)->info; }

passes::GpuLimits opencl_limits(int index) {
  OpenclDeviceInfo d = opencl_device(index);
  passes::GpuLimits l;
  l.max_threads_per_block = d.max_work_group_size;
  for (int i = 0; i < 3; ++i) l.max_block[i] = d.max_work_item_sizes[i];
  l.max_shared_bytes = d.local_mem_bytes;
  return l;
}

std::unique_ptr<DeviceProgram> opencl_program(const std::string& source, const std::vector<std::string>& kernels,
                                              int index) {
  return std::make_unique<OpenclProgram>(context(index), source, kernels);
}

}  // namespace kiln::gpu
