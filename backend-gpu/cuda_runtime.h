#pragma once
// CUDA: kernels compiled to PTX by NVRTC (no GPU needed), run through the driver API
// loaded at run time with dlopen("libcuda.so.1"): a machine with the toolkit but no GPU
// (or no driver) still compiles, and says so when asked to run. Built only where CMake
// finds the CUDA toolkit (KILN_GPU_HAVE_CUDA).
#include <memory>
#include <string>
#include <vector>

#include "backend-gpu/device_program.h"
#include "compiler/passes/split_host_device.h"

namespace kiln::gpu {

// The architecture CUDA kernels are compiled for unless a target says otherwise.
inline constexpr const char* kDefaultCudaArch = "sm_80";

// PTX of CUDA C++ `source` for `arch` ("sm_80", "sm_90"); CompileError with NVRTC's log.
std::string nvrtc_ptx(const std::string& source, const std::string& arch = kDefaultCudaArch);

// cuda_source(f), compiled to PTX.
std::string cuda_ptx(const passes::DeviceFunc& f, const std::string& arch = kDefaultCudaArch);

// Whether the driver loads and has a device; `why` says what is missing when not.
bool cuda_driver_available(std::string* why = nullptr);

// Loads `ptx` on device `device` (its primary context) and finds `kernels`. RuntimeError
// "no CUDA driver (libcuda.so.1) on this machine" without a driver.
std::unique_ptr<DeviceProgram> cuda_program(const std::string& ptx, const std::vector<std::string>& kernels,
                                            int device = 0);

}  // namespace kiln::gpu
