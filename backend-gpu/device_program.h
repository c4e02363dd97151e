#pragma once
// What the GPU module needs of a runtime (OpenCL, CUDA): device memory, copies, and the
// kernels of one compiled program, launched by index in the order they were named.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"

namespace kiln::gpu {

// A failed runtime call (the message names the call and its error code).
class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& what) : Error(what) {}
};

// A device buffer: an OpenCL cl_mem or a CUDA CUdeviceptr.
using DevicePtr = uint64_t;

struct LaunchDims {
  std::array<size_t, 3> grid = {1, 1, 1};   // blocks (work-groups)
  std::array<size_t, 3> block = {1, 1, 1};  // threads (work-items) per block
};

class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;
  virtual DevicePtr alloc(size_t bytes) = 0;
  virtual void free(DevicePtr p) = 0;
  virtual void upload(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, DevicePtr src, size_t bytes) = 0;
  // Queues kernel `kernel` (an index into the names the program was built with).
  virtual void launch(size_t kernel, const std::vector<DevicePtr>& args, const LaunchDims& dims) = 0;
  // Waits for everything queued; then kernel_ms() holds the last launches' times.
  virtual void finish() = 0;
  // Kernel `kernel`'s last time in milliseconds (device events), or -1 if not measured.
  virtual double kernel_ms(size_t kernel) const = 0;
  virtual const std::vector<std::string>& kernel_names() const = 0;
};

}  // namespace kiln::gpu
