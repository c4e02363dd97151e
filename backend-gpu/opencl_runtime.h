#pragma once
// The OpenCL runtime, through the ICD loader (pocl on a machine without a GPU): one
// device and context per process and device index, made on first use; programs built
// from OpenCL C source; buffers, copies and launches on an in-order profiling queue.
// Every failed OpenCL call is a RuntimeError naming the call and its error code.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend-gpu/device_program.h"
#include "compiler/passes/split_host_device.h"

namespace kiln::gpu {

struct OpenclDeviceInfo {
  int index = 0;  // among all platforms' devices, in order
  std::string name;
  std::string platform;
  std::string version;
  bool is_gpu = false;
  int64_t max_work_group_size = 0;
  std::array<int64_t, 3> max_work_item_sizes = {0, 0, 0};
  int64_t local_mem_bytes = 0;
};

// The device kernels run on: `index` among all devices, or with -1 the environment's
// KILN_OPENCL_DEVICE, else the first GPU, else the first device. RuntimeError when
// there is none (no ICD installed).
OpenclDeviceInfo opencl_device(int index = -1);

// What that device allows one kernel (split_host_device's limits).
passes::GpuLimits opencl_limits(int index = -1);

// Builds `source` on the device and creates `kernels` (entry points, in launch-index
// order). A build failure is a CompileError carrying the build log.
std::unique_ptr<DeviceProgram> opencl_program(const std::string& source, const std::vector<std::string>& kernels,
                                              int index = -1);

}  // namespace kiln::gpu
