#pragma once
// GPU lowering after lower() (as TVM's SplitHostDevice, ThreadSync and VerifyGPUCode):
// a function whose loops are bound to blockIdx/threadIdx axes becomes a list of
// kernels that the host launches in order.
//
// - Each top-level loop nest bound to GPU axes is one kernel; the host side keeps only
//   the launches and the global temporaries between them (buffers the function
//   allocates outside any kernel).
// - Inside a kernel, every loop bound to one axis reads the same hardware index: the
//   loops become that index (guarded where a loop is shorter than the launch), so the
//   body is what one thread runs. The launch's size along an axis is the largest extent
//   bound to it.
// - "shared" buffers are allocated once per block at the kernel's top; a barrier
//   (`kiln.barrier`) is inserted wherever a shared buffer written by some threads is
//   then read by others (or read, then overwritten by the next iteration of a loop).
// - The kernel is checked against the device's limits (threads per block, block and
//   grid sizes, shared and per-thread memory); a CompileError names the kernel, the axis
//   and the loops bound to it.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/node.h"
#include "compiler/schedule/lower.h"

namespace kiln::passes {

// What a GPU allows one kernel. The defaults are CUDA's for compute capability 8.x/9.x
// (48 KiB of static shared memory per block).
struct GpuLimits {
  int64_t max_threads_per_block = 1024;
  std::array<int64_t, 3> max_block = {1024, 1024, 64};
  std::array<int64_t, 3> max_grid = {2147483647, 65535, 65535};
  int64_t max_shared_bytes = 48 << 10;
  int64_t max_local_bytes = 16 << 10;  // per thread: the "local" buffers
};

// A launch axis of a kernel and the variable its body reads for it.
struct ThreadAxis {
  std::string tag;  // "blockIdx.x" .. "blockIdx.z", "threadIdx.x" .. "threadIdx.z"
  ir::Var var;
  int64_t extent = 1;
  std::vector<std::string> loops;  // the loops bound to it, for messages
};

// A buffer that lives in device memory for the whole function: an argument or a
// global temporary that the host allocates between kernels.
struct DeviceBuffer {
  ir::Var data;
  ir::DataType dtype;
  int64_t elements = 0;
  bool is_arg = false;  // the function's argument `arg_index`, else a temporary
  int arg_index = -1;
  bool written = false;  // some kernel stores to it
};

// A buffer of one block ("shared") declared at the kernel's top.
struct SharedBuffer {
  ir::Var data;
  ir::DataType dtype;
  int64_t elements = 0;
};

struct DeviceKernel {
  std::string name;              // "<function>_kernel<i>"
  std::vector<int> params;       // indices into DeviceFunc::buffers, in parameter order
  std::vector<ThreadAxis> axes;  // the axes the launch uses: blockIdx.* first, then threadIdx.*
  std::vector<SharedBuffer> shared;
  // What each thread runs: scalar loop IR over the parameters' data variables, the
  // axes' variables, the shared buffers (allocated outside it), "local" Allocate
  // nodes of constant size, and barriers: Evaluate(Call "kiln.barrier").
  ir::Stmt body;
  int64_t local_bytes = 0;  // per thread

  // The launch's size along "blockIdx.x" etc. (1 where unused).
  int64_t extent(const std::string& tag) const;
  int64_t threads_per_block() const;
  int64_t shared_bytes() const;
};

struct DeviceFunc {
  std::string name;
  std::vector<ir::Buffer> args;        // the lowered function's arguments
  std::vector<DeviceBuffer> buffers;   // the arguments in order, then the temporaries
  std::vector<DeviceKernel> kernels;   // launched in this order
};

// The name of the barrier intrinsic: Evaluate(Call(int32, "kiln.barrier", {"shared"})).
inline constexpr const char* kBarrier = "kiln.barrier";
ir::Stmt make_barrier();
bool is_barrier(const ir::Stmt& s);

struct SplitOptions {
  GpuLimits limits;
  // Tests turn this off to see that a kernel without its barriers fails.
  bool insert_barriers = true;
};

// CompileError naming the problem: a statement not bound to any GPU axis (at the top
// level or between kernels), an axis bound to a loop whose extent is not a constant, a
// nested loop wider than the loop of the same axis around it, vector code, a shared
// buffer of non-constant size or outside any kernel, a barrier needed under a condition
// that depends on the thread, or a limit exceeded.
DeviceFunc split_host_device(const schedule::LoweredFunc& f, const SplitOptions& options = {});

}  // namespace kiln::passes
