#pragma once
// The KernelModule of a GPU backend: the DeviceFuncs of a module's functions over one
// compiled program. call(i, args) uploads function i's arguments, launches its kernels
// in order (temporaries live on the device) and downloads the arguments they write.
// Device buffers are kept per function between calls. With the executor's memory plan
// (plan_memory), arguments naming one plan buffer share one device buffer across
// functions, constants (weights) are uploaded once, and tensors that only the GPU reads
// and writes are never copied.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "backend-gpu/device_program.h"
#include "compiler/passes/split_host_device.h"
#include "compiler/target/backend.h"

namespace kiln::gpu {

// Every kernel's name of `funcs`, in launch order: the program's kernel list.
std::vector<std::string> kernel_names(const std::vector<passes::DeviceFunc>& funcs);

// The launch size of a kernel: its axes' extents.
LaunchDims launch_dims(const passes::DeviceKernel& k);

class DeviceModule : public target::KernelModule {
 public:
  // `program` holds kernel_names(funcs), in that order.
  DeviceModule(std::vector<passes::DeviceFunc> funcs, std::unique_ptr<DeviceProgram> program);
  ~DeviceModule() override;
  void call(size_t index, void* const* args) const override;
  std::vector<target::KernelStats> stats() const override;
  void plan_memory(const std::vector<std::vector<target::ArgUse>>& kernels) override;
  // Bytes copied to and from the device since the module was made.
  uint64_t bytes_uploaded() const { return uploaded_; }
  uint64_t bytes_downloaded() const { return downloaded_; }
  const std::vector<passes::DeviceFunc>& funcs() const { return funcs_; }

 private:
  std::vector<passes::DeviceFunc> funcs_;
  std::unique_ptr<DeviceProgram> program_;
  std::vector<size_t> first_kernel_;  // per function: its first kernel's program index
  mutable std::mutex mu_;
  mutable std::vector<std::vector<DevicePtr>> buffers_;  // per function, per DeviceBuffer; empty until called
  std::vector<std::vector<bool>> read_;                    // per function, per DeviceBuffer: some kernel loads it
  // The memory plan, per function, per argument (empty without one), and the device
  // buffers of its buffer ids.
  std::vector<std::vector<target::ArgUse>> plan_;
  mutable std::map<int, DevicePtr> planned_;
  std::map<int, size_t> planned_bytes_;
  mutable std::set<int> constants_uploaded_;
  mutable uint64_t uploaded_ = 0, downloaded_ = 0;
};

}  // namespace kiln::gpu
