#pragma once
// GPU kernels as C source (as TVM's CodeGenOpenCL and CodeGenCUDA): one printer, two
// dialects. Each DeviceKernel of a passes::DeviceFunc becomes one entry point named
// after it; its parameters are the kernel's buffers in DeviceKernel::params order.
//
// Semantics follow the loop IR, not C: integer Div/Mod round towards minus infinity,
// casts wrap, float-to-int casts truncate, saturate and map NaN to 0 (as backend-cpu).
// Types the GPU backend does not support (float16, bfloat16, vectors) and unknown
// intrinsics are a CompileError naming the kernel.
#include <string>
#include <vector>

#include "compiler/passes/split_host_device.h"

namespace kiln::gpu {

enum class Dialect { OpenCL, Cuda };

// One program holding every kernel of `funcs` (one preamble of helpers, then the
// kernels in order).
std::string device_source(const std::vector<passes::DeviceFunc>& funcs, Dialect dialect);

// OpenCL C 1.2: `__kernel void name(__global T* restrict p0, ...)`.
std::string opencl_source(const passes::DeviceFunc& f);
// CUDA C++ for NVRTC: `extern "C" __global__ void name(T* __restrict__ p0, ...)`.
std::string cuda_source(const passes::DeviceFunc& f);

// The C element type of a buffer of `t` in `dialect` (bool is stored as one byte).
std::string storage_type_name(ir::DataType t, Dialect dialect);

}  // namespace kiln::gpu
