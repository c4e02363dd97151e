#pragma once
// The GPU backends of compiler/target's registry: "opencl" (always built) and "cuda"
// (where CMake found the CUDA toolkit). A GPU target runs the whole model: each lowered
// function is split into kernels (passes::split_host_device) with the device's limits,
// and a module's kernels are built as one program.
//
//   opencl [-device=N]             N: index among all OpenCL devices (else
//                                  KILN_OPENCL_DEVICE, else the first GPU, else the first)
//   cuda [-arch=sm_80] [-device=N] compiled by NVRTC, run through libcuda.so.1
//
// KILN_DEBUG=gpu prints the kernels' source.
namespace kiln::gpu {

void register_graph_backends();

}  // namespace kiln::gpu
